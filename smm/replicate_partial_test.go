package smm

import "testing"

// prefetchedOn returns the nodes acts order title prefetched on.
func prefetchedOn(acts []Action, title string) []string {
	var out []string
	for _, a := range acts {
		if a.Kind == Prefetch && a.Title == title {
			out = append(out, a.Node)
		}
	}
	return out
}

// TestPlanPrefersANodeWithAPartial: the replica of a title no node holds
// goes to the node that keeps a partial of it (its fill fetches only the
// rest), among nodes otherwise alike; a node busier by more than the
// bytes saved is still passed over.
func TestPlanPrefersANodeWithAPartial(t *testing.T) {
	for _, tc := range []struct {
		name    string
		partial int64 // bytes of t00 (1 GiB) kept on n2
		busyN2  bool  // n2 holds t01, planned there, with demand
		want    string
	}{
		{"no partial: the first of equal nodes", 0, false, "n0"},
		{"three quarters on n2", 3 << 28, false, "n2"},
		{"a byte on n2", 1, false, "n2"},
		{"three quarters on a busy n2", 3 << 28, true, "n0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRep(t, ReplicatorConfig{})
			c := newCluster(3, 2)
			if tc.partial > 0 {
				c.node("n2").Partials = map[string]int64{"t00": tc.partial}
			}
			if tc.busyN2 {
				c.node("n2").Items = []Item{{Title: "t01", Bytes: 1 << 30}}
				seed(t, r, "t01", 0.5, offPeak) // 2 Gbit/s: 0.29 of n2's egress at the target
			}
			seed(t, r, "t00", 0.1, offPeak)
			got := prefetchedOn(r.Plan(offPeak, &c.view), "t00")
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("t00 prefetched on %v, want %s", got, tc.want)
			}
		})
	}
}

// TestChooseNodePrefersANodeWithAPartial: an operator's prefetch without
// a node goes to the node with a partial of the title among nodes alike,
// not to a much busier one.
func TestChooseNodePrefersANodeWithAPartial(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(3, 2)
	c.node("n2").Partials = map[string]int64{"t00": 1 << 29}
	if got, err := r.ChooseNode("t00", &c.view, offPeak); err != nil || got != "n2" {
		t.Fatalf("ChooseNode = %q, %v; want n2 (half of t00 there)", got, err)
	}
	if got, err := r.ChooseNode("t01", &c.view, offPeak); err != nil || got != "n0" {
		t.Fatalf("ChooseNode(t01) = %q, %v; want n0 (no partial of t01 anywhere)", got, err)
	}
	c.node("n2").Utilization = 0.5
	if got, err := r.ChooseNode("t00", &c.view, offPeak); err != nil || got != "n0" {
		t.Fatalf("ChooseNode = %q, %v; want n0 (n2 half busy)", got, err)
	}
}
