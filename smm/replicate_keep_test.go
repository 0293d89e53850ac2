package smm

import (
	"slices"
	"testing"
	"time"
)

// TestOperatorPrefetchKept: the copy an operator's prefetch filled is
// kept on its node for EvictHold: neither the plan's room for its own
// prefetch nor a fill's room through the node's Evictor takes it (it has
// no demand yet: that is why it was prefetched, and unplanned titles of
// the lowest value go first); the plan's own prefetch is not kept; the
// keep ends with the operator's eviction, EvictHold later, or when its
// node is forgotten, and a manager's snapshot carries it over.
func TestOperatorPrefetchKept(t *testing.T) {
	st, err := NewStorage("gdsf", StorageConfig{Replicator: ReplicatorConfig{EvictHold: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Replicator
	c := newCluster(1, 3)
	n0 := c.node("n0")
	n0.DiskBytes = 2 << 30 // two titles
	n0.Items = []Item{{Title: "t01", Bytes: 1 << 30}}
	now := offPeak
	r.Prefetched("n0", "t00", 1<<30, now)
	n0.Items = append(n0.Items, Item{Title: "t00", Bytes: 1 << 30})
	now = now.Add(time.Minute)
	r.FillDone("n0", "t00", now)
	if !r.Kept("n0", "t00", now) || r.Kept("n0", "t01", now) {
		t.Fatalf("kept after the operator's fill: t00 %v t01 %v, want t00 only", r.Kept("n0", "t00", now), r.Kept("n0", "t01", now))
	}

	// A hot title needs room: the plan evicts t01, not the kept t00.
	seed(t, r, "t02", 1, now)
	acts := r.Plan(now, &c.view)
	if want := []Action{{Evict, "n0", "t01"}, {Prefetch, "n0", "t02"}}; !slices.Equal(acts, want) {
		t.Fatalf("plan with t00 kept: %v, want %v", acts, want)
	}
	// Nor does a fill's room, through the node's Evictor.
	ev := st.Evictor("n0")
	if v, ok := ev.Victims(n0.Items, 1<<30, now); !ok || !slices.Equal(v, []string{"t01"}) {
		t.Fatalf("victims with t00 kept: %v %v, want [t01]", v, ok)
	}
	if CanFree(ev, []Item{{Title: "t00", Bytes: 1 << 30}}, 1, now) {
		t.Fatal("CanFree counts the kept t00 as room")
	}

	// A manager's snapshot carries the keep to a restarted manager.
	r2 := newRep(t, ReplicatorConfig{EvictHold: time.Hour})
	if err := r2.RestorePopularity(r.SnapshotPopularity(now)); err != nil || !r2.Kept("n0", "t00", now) {
		t.Fatalf("restored: kept %v (%v), want t00 kept", r2.Kept("n0", "t00", now), err)
	}
	r2.ForgetNode("n0", now)
	if r2.Kept("n0", "t00", now) {
		t.Fatal("kept on a forgotten node")
	}

	// The plan's own prefetch, once filled, is not kept.
	c.apply(t, acts)
	r.FillDone("n0", "t02", now)
	if r.Kept("n0", "t02", now) {
		t.Fatal("the plan's own prefetch kept")
	}
	// EvictHold later the keep is over.
	if later := now.Add(time.Hour); r.Kept("n0", "t00", later) {
		t.Fatal("still kept EvictHold after the fill")
	}
	if v, ok := ev.Victims([]Item{{Title: "t00", Bytes: 1 << 30}}, 1<<30, now.Add(time.Hour)); !ok || !slices.Equal(v, []string{"t00"}) {
		t.Fatalf("victims EvictHold later: %v %v, want [t00]", v, ok)
	}
	// The operator's eviction ends it at once.
	r.Evicted("n0", "t00", now)
	if r.Kept("n0", "t00", now) {
		t.Fatal("kept after the operator evicted it")
	}
}
