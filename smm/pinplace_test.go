package smm

import (
	"slices"
	"testing"
	"time"
)

// TestPinToANodeTooSmallForTheTitle: a pin to a node whose disk is
// smaller than the title is no replica: the copy the plan had elsewhere
// stays planned (it was unplanned, then evicted for room, and the
// cluster's most requested title had no copy at all), and nothing is
// fetched to the small node.
func TestPinToANodeTooSmallForTheTitle(t *testing.T) {
	st, err := NewStorage("gdsf", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Replicator
	c := newCluster(2, 1)
	c.node("n1").DiskBytes = 1 << 29 // half the title
	seed(t, r, "t00", 0.01, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	if h := c.holders("t00"); !slices.Equal(h, []string{"n0"}) {
		t.Fatalf("t00 on %v, want n0 (n1 cannot hold it)", h)
	}
	if _, err := st.Pins().Pin("n1", "t00"); err != nil {
		t.Fatal(err)
	}
	acts := r.Plan(offPeak.Add(time.Minute), &c.view)
	c.apply(t, acts)
	if !r.Planned("n0", "t00") || r.Planned("n1", "t00") || !slices.Equal(c.holders("t00"), []string{"n0"}) {
		t.Fatalf("after a pin to n1: planned on n0 %v, on n1 %v, held on %v (actions %v)", r.Planned("n0", "t00"), r.Planned("n1", "t00"), c.holders("t00"), acts)
	}
}

// TestPinMovesAReplicaWithoutAGap: a title pinned to another node than
// the one that holds its only copy is fetched there, and the copy it had
// stays planned (so not evicted for room) until the pinned one is
// complete.
func TestPinMovesAReplicaWithoutAGap(t *testing.T) {
	st, err := NewStorage("gdsf", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Replicator
	c := newCluster(3, 1)
	seed(t, r, "t00", 1.5, offPeak) // a rate hysteresis would hold at two replicas
	c.apply(t, r.Plan(offPeak, &c.view))
	h := c.holders("t00")
	if len(h) != 1 {
		t.Fatalf("t00 on %v, want one node", h)
	}
	from, to := h[0], "n1"
	if from == "n1" {
		to = "n0"
	}
	if _, err := st.Pins().Pin(to, "t00"); err != nil {
		t.Fatal(err)
	}
	acts := r.Plan(offPeak.Add(time.Minute), &c.view)
	if !slices.Contains(acts, Action{Kind: Prefetch, Node: to, Title: "t00"}) {
		t.Fatalf("no prefetch to the pinned node %s: %v", to, acts)
	}
	if !r.Planned(from, "t00") {
		t.Fatalf("the copy on %s unplanned while the pinned one on %s is to come", from, to)
	}
	// The pinned copy filling: the other still planned.
	n := c.node(to)
	n.Items = append(n.Items, Item{Title: "t00", Bytes: 1 << 30, Filling: true, InUse: true})
	r.Plan(offPeak.Add(2*time.Minute), &c.view)
	if !r.Planned(from, "t00") || !r.Planned(to, "t00") {
		t.Fatalf("while the pinned copy fills: planned on %s %v, on %s %v", from, r.Planned(from, "t00"), to, r.Planned(to, "t00"))
	}
	// Complete: the copy it moved from is no longer planned, plan after
	// plan (the extra replica is not the title's count, which hysteresis
	// would keep).
	n.Items[len(n.Items)-1] = Item{Title: "t00", Bytes: 1 << 30}
	for i := range 4 {
		r.Plan(offPeak.Add(time.Duration(3+i)*time.Minute), &c.view)
		if r.Planned(from, "t00") || !r.Planned(to, "t00") {
			t.Fatalf("plan %d after the pinned copy completed: planned on %s %v, on %s %v", i, from, r.Planned(from, "t00"), to, r.Planned(to, "t00"))
		}
	}
}

// TestClusterPinOutranksAnEvictionHold: a title pinned to the cluster
// whose only copy's node dies is planned again on the node the operator
// evicted it from (the eviction was allowed while another node held it
// whole) when no other node can take it: the pin keeps a copy in the
// cluster, the eviction's hold only keeps the planner from undoing the
// eviction while the title has a copy. The hold kept it off that node,
// and the cluster had no copy of a pinned title for evict_hold (1h).
func TestClusterPinOutranksAnEvictionHold(t *testing.T) {
	st, err := NewStorage("gdsf", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Replicator
	c := newCluster(2, 1)
	if _, err := st.Pins().Pin("", "t00"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"n0", "n1"} {
		c.node(id).Items = []Item{{Title: "t00", Bytes: 1 << 30}}
	}
	// The operator evicts it from n0: n1 holds it whole.
	c.node("n0").Items = nil
	r.Evicted("n0", "t00", offPeak)
	c.apply(t, r.Plan(offPeak.Add(time.Minute), &c.view))
	if h := c.holders("t00"); !slices.Equal(h, []string{"n1"}) {
		t.Fatalf("t00 on %v after the eviction from n0, want n1 alone (the hold keeps it off n0)", h)
	}
	// n1 dies: n0, held, is the only node left.
	c.node("n1").Alive = false
	acts := r.Plan(offPeak.Add(2*time.Minute), &c.view)
	if !slices.Contains(acts, Action{Kind: Prefetch, Node: "n0", Title: "t00"}) {
		t.Fatalf("plan with n1 dead: %v, want t00 prefetched to n0 for its pin to the cluster", acts)
	}
	// A title not pinned stays off the node the operator evicted it from.
	st2, err := NewStorage("gdsf", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c2 := newCluster(2, 1)
	seed(t, st2.Replicator, "t00", 0.01, offPeak)
	c2.node("n1").Items = []Item{{Title: "t00", Bytes: 1 << 30}}
	st2.Replicator.Evicted("n0", "t00", offPeak)
	c2.node("n1").Alive = false
	if acts := st2.Replicator.Plan(offPeak.Add(time.Minute), &c2.view); slices.Contains(acts, Action{Kind: Prefetch, Node: "n0", Title: "t00"}) {
		t.Fatalf("plan of a title not pinned: %v, want none to n0, held", acts)
	}
}
