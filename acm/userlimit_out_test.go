package acm

import (
	"net/http"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestUserLimitLeavesOutSessionsOnANodeOut: a subscriber at its session
// limit whose sessions are on a node whose heartbeat stream just broke
// (it crashed; the manager has not yet taken it for dead) is admitted
// for another title: its viewers, cut off, come back at once. It was
// refused 403/429 "too many sessions" until the node was declared dead,
// and many boxes do not retry a 403.
func TestUserLimitLeavesOutSessionsOnANodeOut(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 1 })
	addrs := map[string]string{"n1": "127.0.0.1:7091", "n2": "127.0.0.1:7092"}
	nodes, out, other, _ := e.startedOnOneOfTwo(addrs, nil)
	if res := e.get("GET", "/vod/t2.ts", "demo", "demo"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second title at the limit with the node in service: %d, want 429", res.StatusCode)
	}
	nodes[out].stop()
	waitFor(t, 5*time.Second, "the broken stream noticed", func() bool { return e.unreachable(out) })
	res := e.get("GET", "/vod/t2.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("another title while %s is out: %d, want a redirect (the session there must not count)", out, res.StatusCode)
	}
	if tk := e.tokenOf(res.Header.Get("Location"), "http", addrs[other], "t2", ".ts"); tk.Node != other {
		t.Fatalf("t2 admitted on %s, want %s", tk.Node, other)
	}
}

// TestNoSupersedeOnANodeOut: at the limit, an idle session on a node
// whose heartbeat stream broke is not superseded for a new request: it is
// not counted there already, so ending it frees no slot. It was, and the
// subscriber went over its limit (three sessions on the node in service
// against a limit of two).
func TestNoSupersedeOnANodeOut(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
	var titles []*pb.StoredTitle
	for _, id := range []string{"t1", "t2", "t3", "adult-1"} {
		titles = append(titles, &pb.StoredTitle{TitleId: id, SizeBytes: 1_500_000, StoredBytes: 1_500_000})
	}
	addrs := map[string]string{"n1": "127.0.0.1:7093", "n2": "127.0.0.1:7094"}
	nodes, out, other, first := e.startedOnOneOfTwo(addrs, titles)
	nodes[out].setIdle(first, 90)
	e.awaitReports(out)
	nodes[out].stop()
	waitFor(t, 5*time.Second, "the broken stream noticed", func() bool { return e.unreachable(out) })
	for _, title := range []string{"t2", "t3"} {
		res := e.get("GET", "/vod/"+title+".ts", "demo", "demo")
		if res.StatusCode != http.StatusFound {
			t.Fatalf("%s while %s is out: %d", title, out, res.StatusCode)
		}
		sid := e.tokenOf(res.Header.Get("Location"), "http", addrs[other], title, ".ts").Session
		if err := nodes[other].event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	if res := e.get("GET", "/vod/adult-1.ts", "demo", "demo"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third title with two playing on %s and the limit 2: %d, want 429", other, res.StatusCode)
	}
}

// startedOnOneOfTwo starts HTTP nodes n1 and n2 at addrs (holding
// titles, when given), admits demo's t1 over HTTP and reports it STARTED
// on its node; it returns the nodes, the one t1 plays on, the other and
// t1's session.
func (e *env) startedOnOneOfTwo(addrs map[string]string, titles []*pb.StoredTitle) (nodes map[string]*fakeNode, on, other, sid string) {
	e.t.Helper()
	nodes = map[string]*fakeNode{}
	for id, a := range addrs {
		nodes[id] = e.startNode(id, nodeOpts{http: a, titles: titles})
	}
	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		e.t.Fatalf("first request: %d", res.StatusCode)
	}
	on, other = redirectedTo(e.t, res.Header.Get("Location"), "http", addrs)
	sid = e.tokenOf(res.Header.Get("Location"), "http", addrs[on], "t1", ".ts").Session
	if err := nodes[on].event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		e.t.Fatal(err)
	}
	return nodes, on, other, sid
}
