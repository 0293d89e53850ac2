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

// TestKeepsStartedAndEndedByAHold: KeepsStarted counts the keeps started
// (the operator's fills completed, not the plan's), during a plan job
// too; a keep restored from a snapshot taken before the operator's
// eviction (the hold restored from the manager's holds) is over: not
// Kept, and not in Keeps for the next snapshot.
func TestKeepsStartedAndEndedByAHold(t *testing.T) {
	r := newRep(t, ReplicatorConfig{EvictHold: time.Hour})
	now := offPeak
	if r.KeepsStarted() != 0 {
		t.Fatalf("KeepsStarted %d at the start, want 0", r.KeepsStarted())
	}
	r.Prefetched("n0", "t00", 1<<30, now)
	r.FillDone("n0", "t00", now)
	if r.KeepsStarted() != 1 {
		t.Fatalf("KeepsStarted %d after the operator's fill, want 1", r.KeepsStarted())
	}
	r.FillDone("n0", "t01", now) // no prefetch of the operator's: no keep
	if r.KeepsStarted() != 1 {
		t.Fatalf("KeepsStarted %d after a fill not the operator's, want 1", r.KeepsStarted())
	}
	j := r.StartPlan(now)
	r.Prefetched("n0", "t02", 1<<30, now)
	r.FillDone("n0", "t02", now)
	if got := r.KeepsStarted(); got != 2 || !r.Kept("n0", "t02", now) {
		t.Fatalf("during a plan job: KeepsStarted %d, t02 kept %v; want 2, kept", got, r.Kept("n0", "t02", now))
	}
	j.Run(&ClusterView{})
	r.FinishPlan(j)
	if got := r.KeepsStarted(); got < 2 || !r.Kept("n0", "t02", now) {
		t.Fatalf("after the plan job: KeepsStarted %d, t02 kept %v; want at least 2, kept", got, r.Kept("n0", "t02", now))
	}

	snap := r.SnapshotPopularity(now) // both keeps
	later := now.Add(time.Minute)
	r.Evicted("n0", "t00", later)
	r2 := newRep(t, ReplicatorConfig{EvictHold: time.Hour})
	if err := r2.RestorePopularity(snap); err != nil {
		t.Fatal(err)
	}
	r2.RestoreHolds(r.Holds(later))
	if r2.Kept("n0", "t00", later) || !r2.Kept("n0", "t02", later) {
		t.Fatalf("restored with t00's hold: t00 kept %v, t02 kept %v; want t02 alone", r2.Kept("n0", "t00", later), r2.Kept("n0", "t02", later))
	}
	if ks := r2.Keeps(later); len(ks) != 1 || ks[0].Title != "t02" {
		t.Fatalf("restored Keeps %v, want t02's alone", ks)
	}
}
