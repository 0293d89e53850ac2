package lsm

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// noOriginSched returns a scheduler with policy p and two nodes: "bare",
// without an origin, ten times the egress of "full" (so that every
// policy that weighs capacity or load would prefer it), holding "held"
// complete and filling "half" (as its report says), at site "north";
// and "full", with an origin, at site "south".
func noOriginSched(t *testing.T, p string) *Scheduler {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = p
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []NodeSpec{
		{ID: "bare", Capacity: Capacity{EgressBps: 10e9, DiskBytes: 1e12}, Site: "north", NoOrigin: true},
		{ID: "full", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 1e12}, Site: "south"},
	} {
		if _, err := s.AddNode(n, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Heartbeat("bare", Report{Titles: []Holding{{Title: "held", Bytes: 1e6}, {Title: "half", Bytes: 1e6, Filling: true}}}, t0); err != nil {
		t.Fatal(err)
	}
	return s
}

// Under every policy a node without an origin is never given a viewer of
// a title it does not hold complete (no fill there, no share of a fill
// its report shows), with or without a site to try first; such viewers
// go to the node with an origin. The titles it holds it still plays.
func TestEveryPolicyFillsNothingOnANodeWithoutOrigin(t *testing.T) {
	for _, p := range Policies() {
		s := noOriginSched(t, p)
		for i := range 40 {
			title := fmt.Sprint("t", i%10)
			if i%5 == 0 {
				title = "half"
			}
			r := Request{Title: title, Client: fmt.Sprint("c", i), Bitrate: 4e6, Bytes: 1e6}
			if i%2 == 0 {
				r.Site = "north" // the bare node's site first
			}
			res, err := s.Place(&r, t0)
			if err != nil || res.NodeID != "full" {
				t.Errorf("%s: viewer %d of %q: %+v %v, want the node with an origin", p, i, title, res, err)
				break
			}
			if !res.Fill && title != "half" && i < 10 {
				t.Errorf("%s: viewer %d of %q on full without a fill", p, i, title)
			}
		}
		if n := s.Node("bare"); n.Sessions != 0 || n.FillSessions != 0 {
			t.Errorf("%s: the bare node has %d sessions, %d filling", p, n.Sessions, n.FillSessions)
		}
		// With the node with an origin drained, the held title plays
		// from the bare node (origin up or down), the others find no node.
		if err := s.SetDraining("full", true); err != nil {
			t.Fatal(err)
		}
		for _, down := range []bool{false, true} {
			r := Request{Title: "held", Client: "h", Bitrate: 4e6, Bytes: 1e6, OriginDown: down}
			if res, err := s.Place(&r, t0); err != nil || res.NodeID != "bare" || res.Fill {
				t.Errorf("%s: viewer of the held title (origin down %v): %+v %v, want bare without a fill", p, down, res, err)
			}
		}
		for _, title := range []string{"half", "t0", "new"} {
			r := Request{Title: title, Client: "x", Bitrate: 4e6, Bytes: 1e6}
			if res, err := s.Place(&r, t0); !errors.Is(err, ErrNoCapacity) {
				t.Errorf("%s: %q with only the bare node in service: %+v %v, want ErrNoCapacity", p, title, res, err)
			}
		}
	}
}

// A request queued while the node with an origin is full is placed there
// once room frees, never on the idle node without an origin.
func TestQueuedRequestWaitsForANodeThatCanFill(t *testing.T) {
	for _, p := range Policies() {
		s := noOriginSched(t, p)
		first, err := s.Place(&Request{Title: "a", Client: "c1", Bitrate: 1e9}, t0)
		if err != nil || first.NodeID != "full" {
			t.Fatalf("%s: %+v %v", p, first, err)
		}
		tk, err := s.Admit(Request{Title: "b", Client: "c2", Bitrate: 1e9}, t0.Add(time.Minute), t0)
		if err != nil || tk.Done {
			t.Fatalf("%s: the second viewer should wait: %+v %v", p, tk, err)
		}
		s.Pump(t0.Add(time.Second))
		if tk.Done {
			t.Fatalf("%s: placed while full is full: %+v", p, tk.Res)
		}
		s.Release(first)
		s.Pump(t0.Add(2 * time.Second))
		if !tk.Done || tk.Err != nil || tk.Res.NodeID != "full" {
			t.Errorf("%s: after the release: done %v %+v %v, want on full", p, tk.Done, tk.Res, tk.Err)
		}
	}
}

// A node that re-registers with an origin fills again; one that loses it
// stops (NodeSpec.NoOrigin follows the latest registration).
func TestNoOriginFollowsRegistration(t *testing.T) {
	s := noOriginSched(t, DefaultPolicy)
	if err := s.SetDraining("full", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Place(&Request{Title: "new", Bitrate: 4e6}, t0); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("bare without origin took a fill: %v", err)
	}
	if _, err := s.AddNode(NodeSpec{ID: "bare", Capacity: Capacity{EgressBps: 10e9, DiskBytes: 1e12}, Site: "north"}, t0); err != nil {
		t.Fatal(err)
	}
	res, err := s.Place(&Request{Title: "new", Bitrate: 4e6}, t0)
	if err != nil || res.NodeID != "bare" || !res.Fill {
		t.Fatalf("bare with an origin: %+v %v, want a fill there", res, err)
	}
	if _, err := s.AddNode(NodeSpec{ID: "bare", Capacity: Capacity{EgressBps: 10e9, DiskBytes: 1e12}, Site: "north", NoOrigin: true}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Place(&Request{Title: "other", Bitrate: 4e6}, t0); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("bare without origin again took a fill: %v", err)
	}
}

// NoSource holds when every node the request could use has no origin and
// none holds the title complete; FillersInServiceFor counts the nodes in
// service with an origin; HoldersInServiceFor leaves out a fill on a node
// without one.
func TestNoSource(t *testing.T) {
	s := noOriginSched(t, DefaultPolicy)
	grace := t0.Add(-30 * time.Second)
	north := func(title string) *Request {
		return &Request{Title: title, Bitrate: 1, Site: "north", SiteOnly: true}
	}
	for _, c := range []struct {
		r                *Request
		noSource         bool
		fillers, holders int
	}{
		{&Request{Title: "new", Bitrate: 1}, false, 1, 0},
		{north("new"), true, 0, 0},
		{north("half"), true, 0, 0},
		{north("held"), false, 0, 1},
		{&Request{Title: "new", Bitrate: 1, Site: "north"}, false, 1, 0}, // not kept to the site
	} {
		if got := s.NoSource(c.r, grace); got != c.noSource {
			t.Errorf("NoSource(%+v) = %v", *c.r, got)
		}
		if got := s.FillersInServiceFor(c.r); got != c.fillers {
			t.Errorf("FillersInServiceFor(%+v) = %d, want %d", *c.r, got, c.fillers)
		}
		if got := s.HoldersInServiceFor(c.r); got != c.holders {
			t.Errorf("HoldersInServiceFor(%+v) = %d, want %d", *c.r, got, c.holders)
		}
	}
	// full drained, or at weight 0: back only when the operator acts, so
	// NoSource; full dead within the grace: it may come back, not
	// NoSource; beyond it: NoSource.
	s.SetDraining("full", true)
	if !s.NoSource(&Request{Title: "new", Bitrate: 1}, grace) || s.FillersInServiceFor(&Request{Title: "new", Bitrate: 1}) != 0 {
		t.Error("full drained: not NoSource, or counted in service")
	}
	s.SetDraining("full", false)
	s.SetWeight("full", 0)
	if !s.NoSource(&Request{Title: "new", Bitrate: 1}, grace) {
		t.Error("full at weight 0: not NoSource")
	}
	s.SetWeight("full", 100)
	s.MarkDead("full")
	if s.NoSource(&Request{Title: "new", Bitrate: 1}, t0.Add(-time.Second)) {
		t.Error("full dead within the grace: NoSource")
	}
	if !s.NoSource(&Request{Title: "new", Bitrate: 1}, t0.Add(time.Second)) {
		t.Error("full dead beyond the grace: not NoSource")
	}
	if s.NoSource(&Request{Title: "held", Bitrate: 1}, t0.Add(time.Second)) {
		t.Error("bare holds the title: NoSource")
	}
	// No node at all: nothing to take into account.
	empty, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if empty.NoSource(&Request{Title: "new", Bitrate: 1}, grace) {
		t.Error("no node: NoSource")
	}
}
