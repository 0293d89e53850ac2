package smm

import (
	"testing"
	"time"
)

// The operator's prefetch waiting on a node in service that cannot take
// it yet (queued behind the node's fill limit, or its retry due while no
// origin channel is free) is not dropped however long it waits: the
// first plan with a slot there and a free channel orders it, as vodctl
// prefetch says. It was dropped RetryMax past its order (retry) time, and
// the manager then forgot the operator's order.
func TestOperatorPrefetchWaitingOnANodeInServiceNotDropped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order func(r *Replicator)
		busy  func(c *cluster, on bool)
	}{
		{"queued behind the fill limit", func(r *Replicator) { r.Queued("n0", "t01", 1<<30, offPeak) }, func(c *cluster, on bool) {
			c.node("n0").Fills = 0
			if on {
				c.node("n0").Fills = DefaultReplicatorConfig().MaxFillsPerNode
			}
		}},
		{"retry with no origin channel", func(r *Replicator) {
			r.Prefetched("n0", "t01", 1<<30, offPeak)
			r.FillFailed("n0", "t01", offPeak)
		}, func(c *cluster, on bool) {
			c.view.OriginFree = 100
			if on {
				c.view.OriginFree = 0
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRep(t, ReplicatorConfig{})
			c := newCluster(2, 4)
			tc.order(r)
			tc.busy(c, true)
			now := offPeak
			for range 4 {
				now = now.Add(r.Config().RetryMax)
				if acts := planJob(r, c, now, func() {}); len(acts) != 0 {
					t.Fatalf("ordered %+v with n0 busy", acts)
				}
				if d := r.DroppedPrefetches(); len(d) != 0 {
					t.Fatalf("dropped %+v while n0 is in service", d)
				}
				if !r.OperatorPrefetch("n0", "t01") {
					t.Fatal("the waiting prefetch is no longer the operator's")
				}
			}
			tc.busy(c, false)
			now = now.Add(time.Minute)
			acts := planJob(r, c, now, func() {})
			if len(acts) != 1 || acts[0] != (Action{Kind: Prefetch, Node: "n0", Title: "t01"}) {
				t.Fatalf("ordered %+v once n0 can take it, want the prefetch of t01 on n0", acts)
			}
		})
	}
}

// The operator's failed prefetch whose node in service holds a complete
// copy of the title (one of another version the manager keeps, or one
// never seen filling) past its retry time by RetryMax is dropped and
// reported: the plan does not retry a title its node holds.
func TestOperatorPrefetchOfATitleItsNodeHoldsDropped(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 4)
	r.Prefetched("n0", "t01", 1<<30, offPeak)
	r.FillFailed("n0", "t01", offPeak)
	c.node("n0").Items = []Item{{Title: "t01", Bytes: 1 << 30}}
	planJob(r, c, offPeak.Add(r.Config().RetryBase+r.Config().RetryMax+time.Minute), func() {})
	droppedOnly(t, r, DropNotRetriedOther, 1)
}
