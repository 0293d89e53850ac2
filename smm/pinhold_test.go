package smm

import (
	"slices"
	"testing"
	"time"
)

// TestPinLiftsTheEvictionHold: the operator's pin of a title to a node it
// evicted the title from ends the eviction's hold there (LiftHolds): the
// pin is the operator's later word, and the title may be planned on the
// node again, also once unpinned (the hold came back with the unpin, and
// kept the title off the node until it ended). A pin to the cluster ends
// the title's holds on every node.
func TestPinLiftsTheEvictionHold(t *testing.T) {
	st, err := NewStorage("gdsf", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Replicator
	c := newCluster(2, 1)
	seed(t, r, "t00", 0.01, offPeak)
	c.node("n1").Items = []Item{{Title: "t00", Bytes: 1 << 30}}
	r.Evicted("n0", "t00", offPeak) // vodctl evict t00 n0
	if _, err := st.Pins().Pin("n0", "t00"); err != nil {
		t.Fatal(err)
	}
	now := offPeak.Add(time.Minute)
	if lifted := r.LiftHolds("n0", "t00", now); !slices.Equal(lifted, []string{"n0"}) || r.Held("n0", "t00", now) {
		t.Fatalf("pin to n0: holds lifted on %v, n0 held %v; want n0's lifted", lifted, r.Held("n0", "t00", now))
	}
	if h := r.Holds(now); len(h) != 0 {
		t.Fatalf("holds after the pin: %v, want none", h)
	}
	// Unpinned, and n1 dies: n0, the only node left, takes the title
	// (a hold would keep it off: the title is pinned nowhere).
	st.Pins().Unpin("n0", "t00")
	c.node("n1").Alive = false
	if acts := r.Plan(now.Add(time.Minute), &c.view); !slices.Contains(acts, Action{Kind: Prefetch, Node: "n0", Title: "t00"}) {
		t.Fatalf("plan after the pin and the unpin, n1 dead: %v, want t00 prefetched to n0", acts)
	}

	// To the cluster: every node's hold of the title ends, not another
	// title's.
	r.Evicted("n0", "t00", now)
	r.Evicted("n1", "t00", now)
	r.Evicted("n0", "t01", now)
	if lifted := r.LiftHolds("", "t00", now); !slices.Equal(lifted, []string{"n0", "n1"}) {
		t.Fatalf("pin to the cluster: holds lifted on %v, want n0 and n1", lifted)
	}
	if h := r.Holds(now); len(h) != 1 || h[0].Title != "t01" {
		t.Fatalf("holds after the pin to the cluster: %v, want t01's on n0 alone", h)
	}
}
