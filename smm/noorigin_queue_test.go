package smm

import (
	"testing"
	"time"
)

// An operator's prefetch queued on a node that then registers without an
// origin (NodeView.NoOrigin) is given up at the next plan: never ordered,
// and no longer listed as queued (it was, for ever).
func TestQueuedPrefetchOnANodeThatLostItsOriginIsDropped(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 4)
	r.Queued("n0", "t01", 1<<30, offPeak)
	if fs := r.Fills(); len(fs) != 1 || fs[0].State != FillQueued {
		t.Fatalf("fills after Queued: %+v", fs)
	}
	c.node("n0").NoOrigin = true
	now := offPeak
	for range 3 {
		for _, a := range r.Plan(now, &c.view) {
			if a.Node == "n0" {
				t.Fatalf("action on the node without an origin: %v", a)
			}
		}
		now = now.Add(time.Minute)
	}
	for _, f := range r.Fills() {
		if f.Node == "n0" {
			t.Fatalf("the prefetch queued on n0 is still listed: %+v", f)
		}
	}
}
