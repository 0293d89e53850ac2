package acm

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

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
func redirectedTo(t *testing.T, loc, scheme string, addrs map[string]string) (to, other string) {
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
	nodes := map[string]*fakeNode{}
	for id, a := range addrs {
		nodes[id] = e.startNode(id, nodeOpts{http: a})
	}
	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("first request: %d", res.StatusCode)
	}
	out, other := redirectedTo(t, res.Header.Get("Location"), "http", addrs)
	first := e.tokenOf(res.Header.Get("Location"), "http", addrs[out], "t1", ".ts").Session
	if err := nodes[out].event(first, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	nodes[out].stop()
	waitFor(t, 5*time.Second, "the broken stream noticed", func() bool { return e.unreachable(out) })

	res = e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("back while %s is out: %d (limit 1: the stranded session must not count)", out, res.StatusCode)
	}
	again := e.tokenOf(res.Header.Get("Location"), "http", addrs[other], "t1", ".ts")
	if again.Node != other || again.Session == first {
		t.Fatalf("back while %s is out: session %s on %s, want a new one on %s", out, again.Session, again.Node, other)
	}
	if ids := e.sessionIDs(); len(ids) != 1 || ids[0] != again.Session {
		t.Fatalf("sessions %v, want only the new %s", ids, again.Session)
	}
	if got := e.reserved(out); got != 0 {
		t.Fatalf("%s still reserves %d bit/s for the stranded session", out, got)
	}

	// The node comes back, still playing the stranded session: it is told
	// to end it.
	ended := make(chan []string, 16)
	back := e.startNode(out, nodeOpts{http: addrs[out], onCommand: func(c *pb.NodeCommand) {
		if es := c.GetEndSessions(); es != nil {
			ended <- es.GetSessionIds()
		}
	}})
	back.setSessions(first)
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ids := <-ended:
			if slices.Contains(ids, first) {
				return
			}
		case <-deadline:
			t.Fatalf("%s, back and listing %s, was not told to end it", out, first)
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
