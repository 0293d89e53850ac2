package acm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// planOnce runs one plan a second ahead (after a backoff shorter than
// that), as the plan loop would (planMu held through it).
func (e *env) planOnce() {
	e.m.planMu.Lock()
	defer e.m.planMu.Unlock()
	e.planWith(time.Now().Add(time.Second), func() {})
}

// An operator's prefetch given up after its last failed retry
// (smm.MaxHandRetries failures) is forgotten as the operator's order: a
// warning names the node, the title, the failures and the last error, its
// stored order leaves the store (a restart would have queued it again),
// and a later prefetch of the title by the planner's own plan there (a
// pin's), failed and waiting for its retry on a node since drained, is
// not passed over by a prefetch naming no node as the operator's order
// that "vodctl evict t1 n1" cancels (it does not cancel a planner's
// order). The manager kept the mark and the stored order: the answer
// named that command, and the store kept the order.
func TestOperatorPrefetchGivenUpForgotten(t *testing.T) {
	var log logtest.Buffer
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		// Backoffs of 1 to 512 ms, each retry due a second later (planOnce)
		// and not yet forgotten as one not ordered for long (RetryMax).
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Millisecond, time.Hour
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	n1.setFailing(true)
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.HasPrefix(ack.GetMessage(), "prefetch ordered;") {
		t.Fatalf("prefetch of t1 on n1: %v %v, want it ordered", ack, err)
	}
	if o := storedOrders(t, e); len(o) != 1 || o[0].Node != "n1" || o[0].Title != "t1" {
		t.Fatalf("stored orders %+v, want t1 on n1", o)
	}
	// Retried (by these plans, or by those a failure asks for) until
	// given up.
	for attempts := 0; ; {
		waitFor(t, 10*time.Second, "the try failed", func() bool {
			f := e.fill("n1", "t1")
			return f == nil || (f.State == "backoff" && int(f.Attempts) > attempts)
		})
		f := e.fill("n1", "t1")
		if f == nil {
			break
		}
		attempts = int(f.Attempts)
		e.planOnce()
	}
	if k := n1.count("prefetch t1"); k != smm.MaxHandRetries {
		t.Fatalf("given up after %d tries, want %d", k, smm.MaxHandRetries)
	}
	waitFor(t, 10*time.Second, "the given up order gone from the store", func() bool { return len(storedOrders(t, e)) == 0 })
	waitFor(t, 10*time.Second, "the warning", func() bool {
		s := log.String()
		return strings.Contains(s, "operator's prefetch given up") && strings.Contains(s, "node=n1 title=t1 failures=10") &&
			strings.Contains(s, "origin: UNAVAILABLE")
	})
	// The planner's own order of t1 there (pinned), failed.
	if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	e.planOnce()
	n1.waitCommand(t, "prefetch t1", smm.MaxHandRetries+1)
	waitFor(t, 10*time.Second, "the planner's prefetch in backoff", func() bool {
		f := e.fill("n1", "t1")
		return f != nil && f.State == "backoff"
	})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	ack, err = e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
	if err != nil || ack.GetNodeId() != "n2" {
		t.Fatalf("prefetch of t1 naming no node: %v %v, want it ordered on n2", ack, err)
	}
	if msg := ack.GetMessage(); strings.Contains(msg, "vodctl evict t1 n1") || strings.Contains(msg, `node "n1"`) {
		t.Errorf("answer %q names the planner's failed prefetch on n1 as the operator's order that vodctl evict cancels", msg)
	}
}
