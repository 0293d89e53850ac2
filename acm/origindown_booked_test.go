package acm

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "vodcluster/proto/vodcluster/v1"
)

// originDownPair starts a manager whose origin check runs every 50 ms and
// two empty nodes n1 and n2 (HTTP 127.0.0.1:3 and :4), and returns the
// nodes by id.
func originDownPair(t *testing.T) (*env, map[string]*fakeNode) {
	t.Helper()
	e := newManager(t, "", func(m *Manager) { m.OriginCheck = 50 * time.Millisecond })
	nodes := map[string]*fakeNode{
		"n1": e.startNode("n1", nodeOpts{http: "127.0.0.1:3"}),
		"n2": e.startNode("n2", nodeOpts{http: "127.0.0.1:4"}),
	}
	return e, nodes
}

// setOriginDown makes the fake origin fail its health checks and waits
// until the manager counts it down.
func (e *env) setOriginDown(t *testing.T) {
	t.Helper()
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor(t, 5*time.Second, "the origin seen down", func() bool { return e.m.originDown.Load() })
}

// holdWhole makes n report title whole and waits until the manager's view
// of n shows it so.
func (e *env) holdWhole(t *testing.T, n *fakeNode, title string) {
	t.Helper()
	n.mu.Lock()
	n.titles = append(n.titles, &pb.StoredTitle{TitleId: title, SizeBytes: 1_500_000, StoredBytes: 1_500_000})
	n.mu.Unlock()
	waitFor(t, 5*time.Second, n.id+"'s report of "+title, func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		st := e.m.nodes[n.id].titles[title]
		return st != nil && !st.GetFilling()
	})
}

// While the origin is down, a new request for a title whose only "copy"
// is a fill booked for a viewer who has not reached its node is refused
// at once with 503 (the booked fill cannot start: the node would answer
// 503 after the redirect); once another node reports the title whole,
// the request goes there, not to the node with the booked fill.
func TestOriginDownNewRequestSkipsBookedFill(t *testing.T) {
	e, nodes := originDownPair(t)
	first := e.admitOne("t2") // a fill; the viewer never reaches the node
	booked := e.session(first).NodeId
	other := map[string]string{"n1": "n2", "n2": "n1"}[booked]
	e.setOriginDown(t)
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("origin down, t2 only booked on %s: %d (Location %v), want 503", booked, res.StatusCode, res.Header["Location"])
	}
	e.holdWhole(t, nodes[other], "t2")
	id := e.admitOne("t2")
	if s := e.session(id); s.NodeId != other {
		t.Fatalf("origin down, t2 whole on %s and booked on %s: the viewer placed on %s", other, booked, s.NodeId)
	}
}

// The same viewer asking again over HTTP for a title admitted with a fill
// its node has not started, while the origin is down and another node
// reports the title whole, is sent to that node: its session ends (the
// viewer never reached its node) and a new one is admitted there. It was
// sent back to its own node, which answered 503.
func TestOriginDownRepeatMovesToHolder(t *testing.T) {
	e, nodes := originDownPair(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t2.ts", nil)
		req.SetBasicAuth("demo", "demo")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get(); res.StatusCode != http.StatusFound {
		t.Fatalf("first request, origin up: %s", res.Status)
	}
	ss := e.sessions()
	if len(ss) != 1 {
		t.Fatalf("%d sessions after the first request, want 1", len(ss))
	}
	booked, firstID := ss[0].NodeId, ss[0].SessionId
	other := map[string]string{"n1": "n2", "n2": "n1"}[booked]
	addr := map[string]string{"n1": "127.0.0.1:3", "n2": "127.0.0.1:4"}
	e.setOriginDown(t)
	e.holdWhole(t, nodes[other], "t2")
	res := get()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusFound || !strings.Contains(loc, "//"+addr[other]+"/") {
		t.Fatalf("same viewer again, origin down, t2 whole on %s, booked on %s: %s to %q; want 302 to %s", other, booked, res.Status, loc, addr[other])
	}
	ss = e.sessions()
	if len(ss) != 1 || ss[0].NodeId != other || ss[0].SessionId == firstID {
		t.Fatalf("sessions after the move: %+v; want one new session on %s", ss, other)
	}
	// Asked again: the new session, on the holder.
	if res := get(); res.StatusCode != http.StatusFound || !strings.Contains(res.Header.Get("Location"), "//"+addr[other]+"/") || len(e.sessions()) != 1 {
		t.Fatalf("asked again after the move: %s to %q, %d sessions", res.Status, res.Header.Get("Location"), len(e.sessions()))
	}
}
