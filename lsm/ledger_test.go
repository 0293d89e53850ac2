package lsm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A node's own overload threshold is IPVS's upper threshold for every
// policy: above it the node is flagged and gets no new session; the flag
// clears only below OverloadLower (0.9) of it.
func TestEveryPolicySkipsANodeAboveItsOwnThreshold(t *testing.T) {
	for _, p := range Policies() {
		s := sched(t, p, nil, 100e6, 100e6, 100e6)
		if err := s.SetOverload("a", 0.5); err != nil {
			t.Fatal(err)
		}
		a := s.Node("a")
		s.Reserve("a", "bg", 44e6)
		two, _ := s.Reserve("a", "bg", 2e6)
		five, _ := s.Reserve("a", "bg", 5e6) // 51% > 50%: flagged
		if !a.OverloadFlag || s.Eligible(0, &Request{Title: "x", Bitrate: 1e6}) {
			t.Fatalf("%s: a at 51%% of a 50%% threshold: flag %v", p, a.OverloadFlag)
		}
		try := func(phase string) {
			for i := 0; i < 30; i++ {
				r := Request{Title: fmt.Sprint("t", i%4), Client: fmt.Sprint("c", i), Bitrate: 1e6}
				res, err := s.Place(&r, t0)
				if err == nil && res.NodeID == "a" {
					t.Fatalf("%s: %s: new session on the flagged node a (%.2f)", p, phase, a.Utilization())
				}
				if err == nil {
					s.Release(res)
				}
			}
		}
		try("above the threshold")
		// Back to 46%: below the threshold, above the lower mark (45%).
		s.Release(five)
		if !a.OverloadFlag {
			t.Fatalf("%s: flag cleared at 46%%, above the lower mark", p)
		}
		try("between the marks")
		// 44%: below the lower mark, eligible again.
		s.Release(two)
		if a.OverloadFlag || !s.Eligible(0, &Request{Title: "x", Bitrate: 1e6}) {
			t.Fatalf("%s: flag still set at %.2f", p, a.Utilization())
		}
		// Without its own threshold, a node above Config.Overload stays
		// eligible (only the locality policies pass over such holders).
		s.SetOverload("a", 0)
		s.Reserve("a", "bg", 50e6) // 94%
		if a.OverloadFlag || !s.Eligible(0, &Request{Title: "x", Bitrate: 1e6}) || !s.Overloaded(0) {
			t.Fatalf("%s: global threshold: flag %v, overloaded %v", p, a.OverloadFlag, s.Overloaded(0))
		}
		if an := s.Anomalies(); an != (Anomalies{}) {
			t.Fatalf("%s: anomalies %+v", p, an)
		}
	}
}

// The measured egress sets the flag too, and a flagged holder is not
// chosen even by lall.
func TestOverloadFlagFromMeasuredEgress(t *testing.T) {
	s := sched(t, "lall", nil, 100e6, 100e6)
	s.SetReplica("a", "film", false, 1)
	s.SetOverload("a", 0.8)
	s.Heartbeat("a", Report{EgressBps: 85e6}, t0)
	if id, _ := place(t, s, "film", "x", 1e6); id != "b" {
		t.Fatalf("flagged holder chosen: %s", id)
	}
	s.Heartbeat("a", Report{EgressBps: 70e6}, t0) // below 0.72
	if id, _ := place(t, s, "film", "x", 1e6); id != "a" {
		t.Fatalf("holder not back after its load fell: %s", id)
	}
}

// sameCost reports whether nodes i and j cost the same for r under lall's
// rule (a tie either may win).
func sameCost(s *Scheduler, r *Request, i, j int) bool {
	cost := func(k int) float64 {
		n := s.Nodes[k]
		c := s.loadWith(k, 1) + float64(r.Bitrate)/weightedBps(n)
		if _, held := n.titles[r.Title]; !held {
			c += s.diskTerm(n) + s.fillCharge()
		}
		return c
	}
	return math.Abs(cost(i)-cost(j)) < 1e-12
}

// Unbalanced releases and bookings above capacity are counted, not
// hidden.
func TestAnomaliesAreCounted(t *testing.T) {
	s := sched(t, "lall", nil, 10e6, 10e6)
	_, res := place(t, s, "film", "x", 4e6)
	s.Release(res)
	if an := s.Anomalies(); an != (Anomalies{}) {
		t.Fatalf("a balanced release counted: %+v", an)
	}
	s.Release(res) // twice
	s.Release(Reservation{Node: 7, Bitrate: 1})
	if an := s.Anomalies(); an.UnbalancedReleases != 2 {
		t.Fatalf("unbalanced releases %+v, want 2", an)
	}
	n := s.Node(res.NodeID)
	if n.ReservedBps != 0 || n.Sessions != 0 {
		t.Fatalf("counters below zero: %+v", n)
	}
	// Reserve books above capacity (what plays, plays) and says so.
	s.Reserve("a", "x", 8e6)
	s.Reserve("a", "y", 8e6)
	if an := s.Anomalies(); an.OverCapacity != 1 || s.Node("a").ReservedBps != 16e6 {
		t.Fatalf("over capacity %+v, reserved %d", an, s.Node("a").ReservedBps)
	}
	// b comes back with less capacity than it has reserved.
	s.Reserve("b", "z", 8e6)
	if _, err := s.AddNode(NodeSpec{ID: "b", Capacity: Capacity{EgressBps: 5e6}}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if an := s.Anomalies(); an.OverCapacity != 2 {
		t.Fatalf("shrunk node not counted: %+v", an)
	}
	r := Request{Title: "w", Bitrate: 1e6}
	if _, err := s.Place(&r, t0.Add(time.Second)); err == nil {
		t.Fatal("placed on a node above its capacity")
	}
}

// lallByScan is the default policy's rule written plainly, by a scan of
// every node: the reference the tree-backed Pick must agree with.
func lallByScan(s *Scheduler, r *Request) int {
	b := float64(r.Bitrate)
	cool, coolCost, hot, hotCost := -1, 0.0, -1, 0.0
	fill, fillCost := -1, 0.0
	for i, n := range s.Nodes {
		if !s.Eligible(i, r) {
			continue
		}
		if _, held := n.titles[r.Title]; held {
			c := s.loadWith(i, 1) + b/weightedBps(n)
			if s.Overloaded(i) {
				if hot < 0 || c < hotCost {
					hot, hotCost = i, c
				}
			} else if cool < 0 || c < coolCost {
				cool, coolCost = i, c
			}
			continue
		}
		if c := s.loadWith(i, 1) + b/weightedBps(n) + s.diskTerm(n) + s.fillCharge(); fill < 0 || c < fillCost {
			fill, fillCost = i, c
		}
	}
	best, bestCost := cool, coolCost
	if best < 0 {
		best, bestCost = hot, hotCost
	}
	switch {
	case best >= 0 && s.Config.OriginChannels > 0 && s.Filling() >= s.Config.OriginChannels:
		return best
	case fill < 0 || (best >= 0 && bestCost <= fillCost):
		return best
	}
	return fill
}

// The fill tree's search finds exactly what a scan of every node finds:
// the eligible node without the title where the session costs least,
// whatever the mix of full links, full disks, session limits, drained,
// dead, flagged and slow-starting nodes.
func TestFillSearchMatchesAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		s := sched(t, "lall", nil)
		r := Request{Title: "film", Bitrate: int64(1e6 * (1 + rng.IntN(200))), Bytes: int64(rng.IntN(3)) * 4e8}
		nodes := 1 + rng.IntN(40)
		for i := 0; i < nodes; i++ {
			id := fmt.Sprint("n", i)
			capBps := int64(1e8 * (1 + rng.IntN(80)))
			c := Capacity{EgressBps: capBps, DiskBytes: int64(rng.IntN(3)) * 1e9}
			if rng.IntN(5) == 0 {
				c.MaxSessions = 1 + rng.IntN(3)
			}
			join := t0
			if rng.IntN(6) == 0 {
				join = t0.Add(time.Hour) // slow-starts at now
			}
			if _, err := s.AddNode(NodeSpec{ID: id, Capacity: c, Weight: 50 + rng.IntN(200)}, join); err != nil {
				t.Fatal(err)
			}
			switch rng.IntN(3) {
			case 0: // headroom about the request's bitrate
				s.Reserve(id, "bg", capBps-r.Bitrate+int64(rng.IntN(3)-1))
			default:
				for k := rng.IntN(4); k > 0; k-- {
					s.Reserve(id, fmt.Sprint("bg", k), int64(rng.Float64()*float64(capBps)/2))
				}
			}
			switch {
			case c.DiskBytes > 0 && r.Bytes > 0 && rng.IntN(2) == 0: // room about the title's size
				s.SetReplica(id, "stored", true, c.DiskBytes-r.Bytes+int64(rng.IntN(3)-1))
			case c.DiskBytes > 0:
				s.SetReplica(id, "stored", rng.IntN(2) == 0, int64(rng.Float64()*float64(c.DiskBytes)))
			}
			switch rng.IntN(12) {
			case 0:
				s.SetDraining(id, true)
			case 1:
				s.MarkDead(id)
			case 2:
				s.SetOverload(id, 0.3)
			case 3:
				s.SetReplica(id, "film", false, 1)
			}
		}
		now := t0.Add(time.Hour + time.Duration(rng.IntN(40))*time.Second)
		s.advance(now)
		for _, skipHeld := range []bool{true, false} {
			got, gotCost := s.cheapestFill(&r, skipHeld)
			want, wantCost := -1, math.Inf(1)
			for i, n := range s.Nodes {
				// Without skipHeld, holders count when they have disk room
				// too (the tree prunes by room): the result is still the
				// least cost among the nodes without the title, or a
				// holder at most as dear.
				if _, held := n.titles[r.Title]; (held && (skipHeld || !diskRoom(n, r.Bytes))) || !s.Eligible(i, &r) {
					continue
				}
				c := s.loadWith(i, 1) + s.diskTerm(n) + float64(r.Bitrate)/weightedBps(n)
				if c < wantCost {
					want, wantCost = i, c
				}
			}
			if (got < 0) != (want < 0) || (want >= 0 && math.Abs(gotCost-wantCost) > 1e-12) {
				t.Fatalf("trial %d, skip held %v: search %d (%v), scan %d (%v)", trial, skipHeld, got, gotCost, want, wantCost)
			}
		}
		// The policy agrees with its rule written as a scan (ties aside:
		// the costs must then be equal).
		if trial%2 == 0 {
			s.Config.OriginChannels = 1 + rng.IntN(3)
		}
		got, want := s.policy.Pick(s, &r), lallByScan(s, &r)
		if got != want && !(got >= 0 && want >= 0 && sameCost(s, &r, got, want)) {
			t.Fatalf("trial %d: lall picked %d, its rule %d", trial, got, want)
		}
	}
}
