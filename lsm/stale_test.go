package lsm

import (
	"testing"
)

// A node holding a stale copy of a title (replaced at the origin) takes no
// new session of it under any policy while the origin can fill it: the
// viewer goes to another node, which fills the new version. With the
// origin away (NoFill) the stale copy is better than nothing. A report
// without the copy (evicted) or with it no longer stale makes the node
// eligible again.
func TestStaleCopyTakesNoNewSession(t *testing.T) {
	for _, policy := range Policies() {
		t.Run(policy, func(t *testing.T) {
			s := newTestScheduler(t, policy, 100e6, 100e6)
			stale := Report{Titles: []Holding{{Title: "film", Bytes: 1e6, Stale: true}, {Title: "other", Bytes: 1e6}}}
			if err := s.Heartbeat("a", stale, t0); err != nil {
				t.Fatal(err)
			}
			a := s.Node("a").Index
			if s.Eligible(a, &Request{Title: "film", Bitrate: 4e6}) {
				t.Fatal("a node with a stale copy is eligible for its title")
			}
			if !s.Eligible(a, &Request{Title: "other", Bitrate: 4e6}) {
				t.Fatal("a stale copy made the node ineligible for another title")
			}
			if !s.Eligible(a, &Request{Title: "film", Bitrate: 4e6, NoFill: true}) {
				t.Fatal("with the origin away the stale copy is refused too")
			}
			for i := range 6 {
				res, err := s.Place(&Request{Title: "film", Client: string(rune('a' + i)), Bitrate: 4e6, Bytes: 1e6}, t0)
				if err != nil || res.NodeID != "b" {
					t.Fatalf("viewer %d of the replaced title: %+v %v, want node b", i, res, err)
				}
				s.Release(res)
			}
			if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "other", Bytes: 1e6}}}, t0); err != nil {
				t.Fatal(err)
			}
			if !s.Eligible(a, &Request{Title: "film", Bitrate: 4e6}) || s.Node("a").stale != 0 {
				t.Fatalf("after the stale copy's eviction: not eligible (stale count %d)", s.Node("a").stale)
			}
			if err := s.Heartbeat("a", stale, t0); err != nil {
				t.Fatal(err)
			}
			if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "film", Bytes: 1e6}, {Title: "other", Bytes: 1e6}}}, t0); err != nil {
				t.Fatal(err)
			}
			if !s.Eligible(a, &Request{Title: "film", Bitrate: 4e6}) || s.Node("a").stale != 0 {
				t.Fatalf("a copy reported current again: not eligible (stale count %d)", s.Node("a").stale)
			}
		})
	}
}

// A title replicated on every node and replaced at the origin: every node
// holds a stale copy, and none can fill the new version (a node keeps one
// copy of a title). A new viewer is placed on a stale copy rather than
// refused (queued until its deadline) for as long as the copies play: the
// old version is better than nothing, as with the origin away.
func TestStaleCopyOnEveryNodeStillServes(t *testing.T) {
	for _, policy := range Policies() {
		t.Run(policy, func(t *testing.T) {
			s := newTestScheduler(t, policy, 100e6, 100e6)
			stale := Report{Titles: []Holding{{Title: "film", Bytes: 1e6, Stale: true}}}
			for _, id := range []string{"a", "b"} {
				if err := s.Heartbeat(id, stale, t0); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.Place(&Request{Title: "film", Client: "x", Bitrate: 4e6, Bytes: 1e6}, t0)
			if err != nil || res.Fill {
				t.Fatalf("viewer of a title every node holds stale: %+v %v, want a stale holder", res, err)
			}
			// A node without the title that can fill it is still preferred.
			s.Release(res)
			if _, err := s.AddNode(NodeSpec{ID: "c", Capacity: Capacity{EgressBps: 100e6}}, t0); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				res, err := s.Place(&Request{Title: "film", Client: string(rune('a' + i)), Bitrate: 4e6, Bytes: 1e6}, t0)
				if err != nil || res.NodeID != "c" {
					t.Fatalf("viewer %d with node c able to fill: %+v %v, want node c", i, res, err)
				}
				s.Release(res)
				if err := s.Heartbeat("c", Report{Titles: []Holding{}}, t0); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A fill of the old version (begun before the title's file was replaced
// at the origin) is stale too: its viewers play on, and a new viewer goes
// to a node that fills the new version rather than joining the old
// version's fill, under every policy.
func TestStaleFillTakesNoNewSession(t *testing.T) {
	for _, policy := range Policies() {
		t.Run(policy, func(t *testing.T) {
			s := newTestScheduler(t, policy, 100e6, 100e6)
			if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "film", Bytes: 1e6, Filling: true, Stale: true}}}, t0); err != nil {
				t.Fatal(err)
			}
			a := s.Node("a").Index
			if s.Eligible(a, &Request{Title: "film", Bitrate: 4e6}) {
				t.Fatal("a node filling a stale version is eligible for its title")
			}
			for i := range 6 {
				res, err := s.Place(&Request{Title: "film", Client: string(rune('a' + i)), Bitrate: 4e6, Bytes: 1e6}, t0)
				if err != nil || res.NodeID != "b" {
					t.Fatalf("viewer %d of the replaced title: %+v %v, want node b", i, res, err)
				}
				s.Release(res)
			}
			// The fill completes, still stale, then is evicted.
			if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "film", Bytes: 1e6, Stale: true}}}, t0); err != nil {
				t.Fatal(err)
			}
			if s.Eligible(a, &Request{Title: "film", Bitrate: 4e6}) || s.Node("a").stale != 1 {
				t.Fatalf("the stale fill completed: eligible or stale count %d, want 1", s.Node("a").stale)
			}
			if err := s.Heartbeat("a", Report{Titles: []Holding{}}, t0); err != nil {
				t.Fatal(err)
			}
			if !s.Eligible(a, &Request{Title: "film", Bitrate: 4e6}) || s.Node("a").stale != 0 {
				t.Fatalf("after the stale copy's eviction: not eligible (stale count %d)", s.Node("a").stale)
			}
		})
	}
}

// With every holder of a title stale and no node able to fill it, new
// viewers pile on the stale copy already playing it most (within its
// capacity), under every policy: the other copies drain, are evicted and
// filled with the new version; spread over all, none would ever drain.
func TestStaleFallbackConcentrates(t *testing.T) {
	for _, policy := range Policies() {
		t.Run(policy, func(t *testing.T) {
			s := newTestScheduler(t, policy, 20e6, 20e6)
			stale := Report{Titles: []Holding{{Title: "film", Bytes: 1e6, Stale: true}}}
			for _, id := range []string{"a", "b"} {
				if err := s.Heartbeat(id, stale, t0); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Reserve("b", "film", 4e6); err != nil { // b plays it once
				t.Fatal(err)
			}
			for i := range 4 { // b has room for 5 sessions of 4 Mbit/s in 20
				res, err := s.Place(&Request{Title: "film", Client: string(rune('a' + i)), Bitrate: 4e6, Bytes: 1e6}, t0)
				if err != nil || res.NodeID != "b" {
					t.Fatalf("viewer %d: %+v %v, want b, the stale copy playing it most", i, res, err)
				}
			}
			// b is full: the next goes to a.
			if res, err := s.Place(&Request{Title: "film", Client: "z", Bitrate: 4e6, Bytes: 1e6}, t0); err != nil || res.NodeID != "a" {
				t.Fatalf("viewer with b full: %+v %v, want a", res, err)
			}
		})
	}
}

// HoldsStale follows the reports and SetStale: true for a stale copy only,
// false for a current copy, another title and a title not held.
func TestHoldsStale(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6)
	if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "film", Bytes: 1e6, Stale: true}, {Title: "other", Bytes: 1e6}}}, t0); err != nil {
		t.Fatal(err)
	}
	a := s.Node("a")
	if !a.HoldsStale("film") || a.HoldsStale("other") || a.HoldsStale("none") {
		t.Fatalf("HoldsStale film %v other %v none %v, want true false false", a.HoldsStale("film"), a.HoldsStale("other"), a.HoldsStale("none"))
	}
	if err := s.SetStale("a", "film", false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStale("a", "other", true); err != nil {
		t.Fatal(err)
	}
	if a.HoldsStale("film") || !a.HoldsStale("other") {
		t.Fatalf("after SetStale: film %v other %v, want false true", a.HoldsStale("film"), a.HoldsStale("other"))
	}
}
