package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// repFill is the state of the Replicator's prefetch of title on node, ""
// when it has none.
func (e *env) repFill(node, title string) smm.FillState {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	for _, f := range e.m.rep.Fills() {
		if f.Node == node && f.Title == title {
			return f.State
		}
	}
	return ""
}

// The operator's prefetch of t1 on n1 under way when n1 goes out of
// service (dead: cut short, still filling in its last report; drained:
// under way) is counted failed and waits for its retry there; a prefetch
// naming no node passes it over naming `vodctl evict t1 n1` as its
// cancel: that command cancels it (OK), saying the title is not evicted
// and why. It was refused FAILED_PRECONDITION (filling), the order left.
// The answer says the drained node's fill is under way (as vodctl fills
// lists it), not that it failed. (The fake node reports its fill not
// preemptible: a prefetch a viewer needs, which no eviction cancels;
// TestOperatorEvictCancelsPrefetchUnderWay has the one it cancels.)
func TestPrefetchPassedOverCancelOfAFillCutShort(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  func(e *env, n1 *simNode)
		why  string // the order's state in the prefetch's answer
		fill string // the fill's in the eviction's
	}{
		// dead: seen dead by then or not (a heartbeat interval).
		{"dead", func(_ *env, n1 *simNode) { n1.stop() }, "(its prefetch there failed 1 time and waits for its retry)", "filling"},
		{"drained", func(e *env, _ *simNode) { e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}) },
			"(its prefetch there is under way, vodctl fills: vodctl evict cancels it while no viewer needs it", "is filling a prefetch a viewer needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newManagerWith(t, "", unhinted(), quietStorage)
			n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
			e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
			if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
				t.Fatal(err)
			}
			n1.progress("t1", 1000)
			waitFor(t, 10*time.Second, "the fill seen on n1", func() bool {
				f := e.fill("n1", "t1")
				return f != nil && f.State == "filling"
			})
			tc.out(e, n1)
			waitFor(t, 10*time.Second, "the cut fill waiting for its retry", func() bool {
				e.m.kickPlan()
				return e.repFill("n1", "t1") == smm.FillBackoff
			})
			ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
			if err != nil || !strings.Contains(ack.GetMessage(), "vodctl evict t1 n1") || !strings.Contains(ack.GetMessage(), tc.why) {
				t.Fatalf("prefetch of t1 naming no node: %v %v, want n1's order named with its cancel and %q", ack, err, tc.why)
			}
			ack, err = e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
			if err != nil || !strings.Contains(ack.GetMessage(), "prefetch there, failed or queued, is cancelled") ||
				!strings.Contains(ack.GetMessage(), `not evicted: title "t1" on node "n1" `) || !strings.Contains(ack.GetMessage(), tc.fill) {
				t.Fatalf("vodctl evict t1 n1, the cancel the answer named: %v %v, want the order cancelled, the fill not evicted and why", ack, err)
			}
			if st := e.repFill("n1", "t1"); st != "" {
				t.Fatalf("the planner's prefetch of t1 on n1 %s after vodctl evict t1 n1 (%q), want it cancelled", st, ack.GetMessage())
			}
		})
	}
}

// The operator's prefetch of t1 on n1 that n1's death cut short is
// cancelled by `vodctl evict t1 n1` at once, as the docs say, not only
// once a plan has counted it failed (it was refused "is filling" until
// then, and the prefetch was ordered again when n1 came back).
func TestEvictCancelsAPrefetchItsNodesDeathCutShort(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m) // no plan meanwhile
		m.Scheduler.HeartbeatInterval = 200 * time.Millisecond
	})
	// n1 alone: no other node's plan counts the fill failed at once.
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n1.progress("t1", 1000)
	waitFor(t, 10*time.Second, "the fill seen on n1 by a plan", func() bool {
		f := e.fill("n1", "t1")
		return f != nil && f.State == "filling" && e.repFill("n1", "t1") == smm.FillFilling
	})
	n1.stop()
	waitFor(t, 10*time.Second, "n1 down", func() bool {
		f := e.fill("n1", "t1")
		return f != nil && f.State == "node down"
	})
	if st := e.repFill("n1", "t1"); st == smm.FillBackoff || st == "" {
		t.Fatalf("the planner's prefetch %q before the eviction: the test wants it before a plan counts it failed", st)
	}
	ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "prefetch there, failed or queued, is cancelled") {
		t.Fatalf("vodctl evict t1 n1 with n1 down: %v %v, want the prefetch cancelled", ack, err)
	}
	if st := e.repFill("n1", "t1"); st != "" {
		t.Fatalf("the planner's prefetch of t1 on n1 %s after vodctl evict t1 n1, want it cancelled", st)
	}
}
