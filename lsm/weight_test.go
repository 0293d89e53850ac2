package lsm

import "testing"

// Weights are IPVS's, 0..MaxWeight (65535): more is refused at SetWeight
// and AddNode, and the weight stays as it was.
func TestWeightRange(t *testing.T) {
	s := newTestScheduler(t, "wlc", 100e6)
	for _, w := range []int{MaxWeight + 1, 1 << 31, -1} {
		if err := s.SetWeight("a", w); err == nil {
			t.Errorf("weight %d accepted", w)
		}
	}
	if w := s.Node("a").Weight; w != DefaultWeight {
		t.Fatalf("weight %d after refusals", w)
	}
	if err := s.SetWeight("a", MaxWeight); err != nil || s.Node("a").Weight != MaxWeight {
		t.Fatalf("weight %d: %v", MaxWeight, err)
	}
	if _, err := s.AddNode(NodeSpec{ID: "b", Weight: MaxWeight + 1, Capacity: Capacity{EgressBps: 1e6}}, t0); err == nil || s.Node("b") != nil {
		t.Fatal("a node announcing weight 65536 registered")
	}
}
