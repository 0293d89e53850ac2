package acm

import (
	"net/http"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// A subscriber cannot hold more than MaxSessionsPerUser sessions: each
// admitted request reserves bandwidth until its client shows up or the
// no-show deadline passes.
func TestSessionLimitPerSubscriber(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	e.admitOne("t2")
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusForbidden {
		t.Fatalf("third session: %d, want 403", res.StatusCode)
	}
	if got := e.reserved("n1"); got != 2*titleBps {
		t.Fatalf("the refused request reserved: %d", got)
	}
	// Over HTTP the same limit is 429.
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
	req.SetBasicAuth("demo", "demo")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("HTTP over the limit: %s, want 429", resp.Status)
	}
	// When one session ends, the subscriber may start another.
	if err := n.event(a, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("after an end: %d, want 302", res.StatusCode)
	}
}
