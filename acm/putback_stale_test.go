package acm

import (
	"context"
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// The operator's prefetch the old stream's sender had taken and could not
// send, whose node registers again holding a stale copy of the title, is
// sent again after the copy's eviction (prefetchAfterStaleLocked); the
// copy the old sender puts back is dropped (dropResentPrefetchCmdsLocked),
// so the node gets the prefetch once, after the eviction (put back, it
// went first, before the eviction, where it fills nothing), whether the
// put-back came before or after the new stream's sender sent the
// registration's. The order stays pending and the operator's (its mark,
// the Replicator's prefetch by hand, its stored order), though a plan saw
// the stale copy complete before its eviction (the Replicator took it for
// the prefetch's completion, and no longer tracked the order as the
// operator's: a failure of the prefetch sent again was the planner's).
func TestStalePrefetchOfACommandBatchPutBackDropped(t *testing.T) {
	for _, newFirst := range []bool{false, true} {
		name := "put back before the new stream sends"
		if newFirst {
			name = "put back after the new stream sent"
		}
		t.Run(name, func(t *testing.T) {
			e := newManagerWith(t, "", versioned(testTitles, "v2"), func(m *Manager) { m.OrderTimeout = time.Minute })
			orderPrefetchWhileAway(t, e)
			ns := e.m.nodes["n"]
			st, done := e.holdCommands(ns) // takes the prefetch, never sends it
			registerBare(t, e, false, staleT3())
			e.planOnce() // sees the stale copy complete
			// A report once a catalog read confirms the copy stale: it is
			// evicted, and the prefetch sent again after the eviction.
			e.m.mu.Lock()
			seen := ns.stale["t3"]
			e.m.mu.Unlock()
			if seen == nil {
				t.Fatal("the stale copy not seen at the registration")
			}
			waitFor(t, 5*time.Second, "a catalog read", func() bool { return e.m.catalogGen.Load() > seen.gen })
			e.m.mu.Lock()
			gen := ns.streamGen
			e.m.mu.Unlock()
			if err := e.m.report(ns, gen, &pb.LoadReport{NodeId: "n", Titles: []*pb.StoredTitle{staleT3()}, DiskFreeBytes: 1 << 39}); err != nil {
				t.Fatal(err)
			}
			var got []*pb.NodeCommand // what the node is sent from the new stream
			if newFirst {
				got = e.due(ns)
			}
			e.releaseHeld(st, done)
			e.m.mu.Lock()
			got = append(got, takeDue(ns)...)
			pending := ns.pending["t3"] != nil
			e.m.mu.Unlock()
			if !pending {
				t.Fatal("the prefetch of t3 no longer ordered after the registration")
			}
			var order []string
			for _, c := range got {
				switch {
				case c.GetPrefetch().GetTitleId() == "t3":
					order = append(order, "prefetch")
				case c.GetEvict().GetTitleId() == "t3":
					order = append(order, "evict")
				}
			}
			if !slices.Equal(order, []string{"evict", "prefetch"}) {
				t.Fatalf("commands for t3 on the new stream %v, want the stale copy's eviction then the prefetch, once", order)
			}
			e.m.mu.Lock()
			byHand := e.m.rep.OperatorPrefetch("n", "t3")
			e.m.mu.Unlock()
			if !e.marked("n", "t3") || !byHand || len(storedOrders(t, e)) != 1 {
				t.Fatalf("the operator's order no longer tracked: marked %v, by hand %v, stored %v", e.marked("n", "t3"), byHand, storedOrders(t, e))
			}
			if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err == nil {
				t.Error("a second prefetch of t3 on n accepted while the first is ordered")
			}
		})
	}
}
