package acm

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// The operator's prefetch ordered on a node while it was away, which comes
// back holding a stale copy of the title that is kept for a while (the
// origin down) and seen by a plan meanwhile, stays the operator's
// prefetch: failed, whether sent again after the copy's eviction (the
// origin back) and failed there, or failed at its order timeout with the
// copy still kept, it waits for its retry as the operator's (vodctl fills
// lists it, the plan retries it), its mark and stored order kept. The
// plan took the stale copy for the prefetch's completion and stopped
// tracking it, so the failure was counted as one of the planner's own,
// never retried nor listed, while its mark and its stored order stayed
// (a later failed prefetch of the planner's there named as the
// operator's order, a restart ordering it again).
func TestOperatorPrefetchOfAStaleCopySeenByAPlanStaysTheOperators(t *testing.T) {
	for _, tc := range []struct {
		name     string
		originUp bool // the origin comes back: the copy is evicted, the prefetch sent again
	}{{"sent again", true}, {"order timeout", false}} {
		t.Run(tc.name, func(t *testing.T) {
			staleSeenByAPlan(t, tc.originUp)
		})
	}
}

func staleSeenByAPlan(t *testing.T, originUp bool) {
	var log logtest.Buffer
	e := newManagerWith(t, "", versioned(testTitles, "v2"), func(m *Manager) {
		quietStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Minute, time.Hour
		m.OrderTimeout = 2 * time.Second
		m.OriginCheck = time.Hour // the origin stays down until the test says otherwise
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	orderPrefetchWhileAway(t, e)
	e.m.originDown.Store(true) // the stale copy is kept, not evicted
	started := make(chan struct{})
	var n *fakeNode
	prefetches := 0  // of t3 received (n.mu)
	evicted := false // t3 (n.mu)
	n = e.startNode("n", nodeOpts{rtsp: "127.0.0.1:7001", titles: []*pb.StoredTitle{staleT3()}, onCommand: func(c *pb.NodeCommand) {
		<-started
		n.mu.Lock()
		defer n.mu.Unlock()
		switch {
		case c.GetEvict().GetTitleId() == "t3":
			evicted = true
			n.titles = slices.DeleteFunc(slices.Clone(n.titles), func(t *pb.StoredTitle) bool { return t.GetTitleId() == "t3" })
		case c.GetPrefetch().GetTitleId() == "t3":
			prefetches++
			if !slices.ContainsFunc(n.titles, func(t *pb.StoredTitle) bool { return t.GetTitleId() == "t3" }) {
				n.failed = append(n.failed, &pb.FillFailure{TitleId: "t3", Reason: "origin: UNAVAILABLE", Prefetch: true, AtUnixMs: time.Now().UnixMilli()})
			}
		}
	}})
	close(started)
	waitFor(t, 5*time.Second, "n in service with its stale copy", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes["n"]
		return e.m.sched.InService(e.m.sched.Node("n")) && ns != nil && ns.titles["t3"] != nil
	})
	e.planOnce() // sees the stale copy
	if originUp {
		e.m.originDown.Store(false)
	}
	waitFor(t, 10*time.Second, "the prefetch failed, waiting for its retry as the operator's", func() bool {
		f := e.fill("n", "t3")
		return f != nil && f.State == "backoff" && f.Attempts == 1
	})
	if !e.marked("n", "t3") || len(storedOrders(t, e)) != 1 {
		t.Fatalf("the operator's order forgotten (marked %v, stored %v) while it waits for its retry", e.marked("n", "t3"), storedOrders(t, e))
	}
	// Listed in backoff is not enough: the planner's own failed prefetch
	// of a title it plans there is listed too, and retried only while
	// the plan wants it there.
	e.m.mu.Lock()
	byHand := e.m.rep.OperatorPrefetch("n", "t3")
	e.m.mu.Unlock()
	if !byHand {
		t.Fatal("the failed prefetch waits for its retry as the planner's own, not as the operator's")
	}
	if !originUp {
		n.mu.Lock()
		defer n.mu.Unlock()
		if evicted {
			t.Fatal("the stale copy was evicted with the origin down: the prefetch did not fail at its order timeout")
		}
		return // the stale copy kept: nothing to retry while it is there
	}
	received := func() int {
		n.mu.Lock()
		defer n.mu.Unlock()
		return prefetches
	}
	before := received()
	e.planAt(3 * time.Minute) // its retry time past
	waitFor(t, 10*time.Second, "the retry", func() bool { return received() > before })
}
