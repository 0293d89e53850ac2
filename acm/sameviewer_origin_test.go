package acm

import (
	"net/http"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "vodcluster/proto/vodcluster/v1"
)

// The same viewer asking again for a title admitted with a fill its node
// has not started (the viewer never reached it) while the origin is down
// is refused at once with 503 and Retry-After, as a new request for a
// title no node has is: it was redirected to the node, which answered 503
// after the redirect. Its session is kept: once the origin serves again
// the same request is redirected to it.
func TestSameViewerRefusedWhileOriginDown(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OriginCheck = 50 * time.Millisecond })
	e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
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
	sessions := func() int {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return len(e.m.sessions)
	}
	if res := get(); res.StatusCode != http.StatusFound || sessions() != 1 {
		t.Fatalf("first request, origin up: %s, %d sessions; want 302 and one session (a fill on n1)", res.Status, sessions())
	}
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor(t, 5*time.Second, "the origin seen down", func() bool { return e.m.originDown.Load() })
	res := get()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("same viewer again, origin down, its node without the title: %s (Location %q), want 503 with Retry-After",
			res.Status, res.Header.Get("Location"))
	}
	// A title its node holds is still served to the same viewer.
	if id := e.admitOne("t1"); e.session(id).NodeId != "n1" {
		t.Fatalf("a title n1 holds, origin down: %+v", e.session(id))
	}
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	waitFor(t, 5*time.Second, "the origin seen up", func() bool { return !e.m.originDown.Load() })
	if res := get(); res.StatusCode != http.StatusFound || sessions() != 2 {
		t.Fatalf("same viewer, origin back: %s, %d sessions; want 302 to its session (2 sessions: t2's and t1's)", res.Status, sessions())
	}
}
