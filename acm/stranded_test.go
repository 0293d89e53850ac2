package acm

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/store"
	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// unreachable reports whether the scheduler has node id out of service
// for a broken heartbeat stream.
func (e *env) unreachable(id string) bool {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	n := e.m.sched.Node(id)
	return n != nil && n.Unreachable
}

// redirectedTo returns the node of two (id → address) that loc redirects
// to, and the other.
func redirectedTo(t testing.TB, loc, scheme string, addrs map[string]string) (to, other string) {
	t.Helper()
	for id, a := range addrs {
		if strings.HasPrefix(loc, scheme+"://"+a+"/") {
			to = id
		} else {
			other = id
		}
	}
	if to == "" || len(addrs) != 2 {
		t.Fatalf("redirect %q names none of %v", loc, addrs)
	}
	return to, other
}

// TestHTTPViewerBackWhileItsNodeIsOut: an HTTP viewer whose node's
// heartbeat stream broke (the node crashed: the manager sends it no new
// viewer) comes back to the front door (a player retrying, or seeking):
// it is admitted anew on the node in service, and its session on the
// other ends (its reservation and its subscriber's slot freed), the node
// told to end it when it reports again. It was given a new token for the
// same session and sent back to the node that was out.
func TestHTTPViewerBackWhileItsNodeIsOut(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 1 })
	addrs := map[string]string{"n1": "127.0.0.1:7081", "n2": "127.0.0.1:7082"}
	nodes, out, other, first := e.startedOnOneOfTwo(addrs, nil)
	nodes[out].stop()
	waitFor(t, 5*time.Second, "the broken stream noticed", func() bool { return e.unreachable(out) })

	again := e.backElsewhere(addrs, out, other, first, "out")
	if ids := e.sessionIDs(); len(ids) != 1 || ids[0] != again.Session {
		t.Fatalf("sessions %v, want only the new %s", ids, again.Session)
	}
	if got := e.reserved(out); got != 0 {
		t.Fatalf("%s still reserves %d bit/s for the stranded session", out, got)
	}

	// The node comes back, still playing the stranded session: it is told
	// to end it.
	e.backAndToldToEnd(out, addrs[out], first)
}

// backElsewhere asks the HTTP front door for t1 again as demo while node
// out (its state: "out", "dead") holds the viewer's session first: the
// answer must be a redirect to a new session on node other (addresses by
// id in addrs), whose token it returns.
func (e *env) backElsewhere(addrs map[string]string, out, other, first, state string) *token.Claims {
	e.t.Helper()
	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		e.t.Fatalf("back while %s is %s: %d (the stranded session must not count at the limit)", out, state, res.StatusCode)
	}
	again := e.tokenOf(res.Header.Get("Location"), "http", addrs[other], "t1", ".ts")
	if again.Node != other || again.Session == first {
		e.t.Fatalf("back while %s is %s: session %s on %s, want a new one on %s", out, state, again.Session, again.Node, other)
	}
	return again
}

// backAndToldToEnd starts node id again at HTTP address addr, listing
// session sid as playing, and waits (15 s at most) for the manager to
// tell it to end sid.
func (e *env) backAndToldToEnd(id, addr, sid string) {
	e.t.Helper()
	ended := make(chan []string, 16)
	back := e.startNode(id, nodeOpts{http: addr, onCommand: func(c *pb.NodeCommand) {
		if es := c.GetEndSessions(); es != nil {
			ended <- es.GetSessionIds()
		}
	}})
	back.setSessions(sid)
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ids := <-ended:
			if slices.Contains(ids, sid) {
				return
			}
		case <-deadline:
			e.t.Fatalf("%s, back and listing %s, was not told to end it", id, sid)
		}
	}
}

// TestRTSPDescribeAgainWhileItsNodeIsOut: a second DESCRIBE on the same
// connection, for a title admitted on a node whose heartbeat stream has
// since broken, is a new admission on the node in service; the first
// ends at once instead of holding its reservation and a slot until the
// no-show timeout.
func TestRTSPDescribeAgainWhileItsNodeIsOut(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 1 })
	addrs := map[string]string{"n1": "127.0.0.1:7011", "n2": "127.0.0.1:7012"}
	nodes := map[string]*fakeNode{}
	for id, a := range addrs {
		nodes[id] = e.startNode(id, nodeOpts{rtsp: a})
	}
	c := e.dialRTSP()
	res := c.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo"))
	if res.StatusCode != base.StatusFound {
		t.Fatalf("first DESCRIBE: %d", res.StatusCode)
	}
	out, other := redirectedTo(t, res.Header["Location"][0], "rtsp", addrs)
	first := e.tokenOf(res.Header["Location"][0], "rtsp", addrs[out], "t1", "").Session
	nodes[out].stop()
	waitFor(t, 5*time.Second, "the broken stream noticed", func() bool { return e.unreachable(out) })

	res = c.mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo"))
	if res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE again while %s is out: %d (limit 1: the stranded session must not count)", out, res.StatusCode)
	}
	again := e.tokenOf(res.Header["Location"][0], "rtsp", addrs[other], "t1", "")
	if again.Node != other || again.Session == first {
		t.Fatalf("DESCRIBE again while %s is out: session %s on %s, want a new one on %s", out, again.Session, again.Node, other)
	}
	if ids := e.sessionIDs(); len(ids) != 1 || ids[0] != again.Session {
		t.Fatalf("sessions %v, want only the new %s", ids, again.Session)
	}
}

// TestStrandedSessionPersistedBeforeTheQueue: the session a viewer back
// at the front door leaves on a node out of service is ended in the store
// before the viewer's new request waits in the queue (as a superseded
// one is), not only once that request is answered: a manager stopped
// during the wait (up to the queue deadline) left it live in the store,
// and the next one restored it and its reservation.
func TestStrandedSessionPersistedBeforeTheQueue(t *testing.T) {
	// The request back waits until the test cancels it.
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = time.Minute })
	nodes := map[string]*fakeNode{
		"n1": e.startNode("n1", nodeOpts{http: "127.0.0.1:7091"}),
		// n2 is in service but cannot take a title: the request back waits.
		"n2": e.startNode("n2", nodeOpts{http: "127.0.0.1:7092", egress: titleBps / 2}),
	}
	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("first request: %d", res.StatusCode)
	}
	first := e.tokenOf(res.Header.Get("Location"), "http", "127.0.0.1:7091", "t1", ".ts").Session
	if err := nodes["n1"].event(first, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	nodes["n1"].stop()
	waitFor(t, 5*time.Second, "the broken stream noticed", func() bool { return e.unreachable("n1") })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("demo", "demo")
	answered := make(chan int, 1)
	go func() {
		c := &http.Client{CheckRedirect: noRedirect.CheckRedirect} // no timeout: the test cancels it
		res, err := c.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		res.Body.Close()
		answered <- res.StatusCode
	}()
	waitFor(t, 5*time.Second, "the request back waiting", func() bool { return e.queued() == 1 })
	waitFor(t, 5*time.Second, "the stranded session ended in the store while the request waits", func() bool {
		_, err := e.m.st.Session(context.Background(), first)
		return errors.Is(err, store.ErrNotFound)
	})
	select {
	case code := <-answered:
		t.Fatalf("the request back was answered %d while n2 could not take it", code)
	default:
	}
	cancel()
	<-answered
}

// TestHTTPViewerBackWhileItsNodeIsDead: as above with the node dead (its
// sessions orphaned, kept for its return within restore_grace), the
// session quiet (no request) for 10 s or more when it died: its viewer
// had left it. Such a session was passed over, as not reserved: the
// viewer was admitted anew beside it, and the node, back within the
// grace, played both, the old one holding its reservation and a slot
// until its pause timeout. One that was not quiet so long (a node that
// only lost its link to the manager plays on: another player of the
// household, an HLS player between segments) is kept.
func TestHTTPViewerBackWhileItsNodeIsDead(t *testing.T) {
	// backAfterDeath starts the viewer's session on one of two nodes,
	// lists it quiet quiet seconds, kills that node and asks again: the
	// manager, the two nodes' ids and addresses, the first session and the
	// new one's token.
	backAfterDeath := func(t *testing.T, addrs map[string]string, quiet int) (*env, string, string, *token.Claims) {
		e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
		nodes, out, other, first := e.startedOnOneOfTwo(addrs, nil)
		nodes[out].setQuiet(first, quiet)
		e.awaitReports(out)
		nodes[out].stop()
		waitFor(t, 10*time.Second, out+" dead", func() bool { return !e.nodeInfo(out).Alive })
		return e, out, first, e.backElsewhere(addrs, out, other, first, "dead")
	}
	t.Run("playing", func(t *testing.T) {
		e, _, first, again := backAfterDeath(t, map[string]string{"n1": "127.0.0.1:7085", "n2": "127.0.0.1:7086"}, 4)
		if ids := e.sessionIDs(); len(ids) != 2 || !slices.Contains(ids, first) || !slices.Contains(ids, again.Session) {
			t.Fatalf("sessions %v, want %s kept beside the new %s", ids, first, again.Session)
		}
	})
	addrs := map[string]string{"n1": "127.0.0.1:7083", "n2": "127.0.0.1:7084"}
	e, out, first, again := backAfterDeath(t, addrs, 12)
	if ids := e.sessionIDs(); len(ids) != 1 || ids[0] != again.Session {
		t.Fatalf("sessions %v, want only the new %s: the orphaned one ended (moved)", ids, again.Session)
	}

	// The node comes back within the grace, still playing the old
	// session: it is told to end it, and it is not restored.
	e.backAndToldToEnd(out, addrs[out], first)
	e.awaitReports(out)
	if ids := e.sessionIDs(); len(ids) != 1 || ids[0] != again.Session {
		t.Fatalf("sessions %v after %s came back, want only %s", ids, out, again.Session)
	}
	if got := e.reserved(out); got != 0 {
		t.Fatalf("%s reserves %d bit/s for the moved session", out, got)
	}
}
