package acm

import (
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A request admitted while the origin is down waits for a node holding
// the title (its only holder is full); when the origin comes back while
// it waits, it may be placed with a fill on another node at once. It kept
// the origin-down restriction and waited for the holder until its
// deadline, then was refused 453 with a node free to fill it.
func TestOriginBackWhileQueuedAllowsFill(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginCheck = 50 * time.Millisecond
		m.QueueDeadline = 4 * time.Second
	})
	nodes := map[string]*fakeNode{
		"n1": e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:11", egress: titleBps}),
		"n2": e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:12"}),
	}
	e.holdWhole(t, nodes["n1"], "t2")
	e.setOriginDown(t)
	if s := e.session(e.admitOne("t2")); s.NodeId != "n1" {
		t.Fatalf("origin down, t2 held on n1 only: the first viewer placed on %s", s.NodeId)
	}
	got := make(chan *base.Response, 1)
	go func() { got <- e.describe("demo", "demo", "t2") }()
	waitFor(t, 5*time.Second, "the second request queued", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.sched.Queued() == 1
	})
	start := time.Now()
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	select {
	case res := <-got:
		if res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:12") {
			t.Fatalf("origin back while queued: %d %v, want 302 to n2 (a fill)", res.StatusCode, res.Header["Location"])
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("placed %v after the origin came back, want at once", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s")
	}
}
