package lsm

import (
	"errors"
	"fmt"
	"testing"
)

// partialSched returns a lall scheduler with two nodes a and b of 1 Gbit/s
// (fill charge 30*4 Mbit/s / 1 Gbit/s = 0.12), a busier than b by busyA
// sessions of 4 Mbit/s (0.004 each) of other titles, and a keeping a
// partial of "film" (1e9 bytes) of stored bytes (none when 0).
func partialSched(t *testing.T, busyA int, stored int64) *Scheduler {
	t.Helper()
	s := sched(t, "lall", nil, 1e9, 1e9)
	var ps []Partial
	if stored > 0 {
		ps = []Partial{{Title: "film", Bytes: stored, Size: 1e9}}
	}
	if err := s.Heartbeat("a", Report{Titles: []Holding{}, Partials: ps}, t0); err != nil {
		t.Fatal(err)
	}
	for i := range busyA {
		if _, err := s.Reserve("a", fmt.Sprint("other", i), 4e6); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func placeFilm(t *testing.T, s *Scheduler) Reservation {
	t.Helper()
	r := Request{Title: "film", Client: "c", Bitrate: 4e6, Bytes: 1e9}
	res, err := s.Place(&r, t0)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestLallPrefersANodeWithAPartialByTheBytesMissing(t *testing.T) {
	for _, c := range []struct {
		name   string
		busyA  int
		stored int64
		want   string
	}{
		// a: 0.04 + 0.004 + 0.12 = 0.164; b: 0.004 + 0.12 = 0.124.
		{"no partial: the idler node fills", 10, 0, "b"},
		// a: 0.044 + 0.12*0.1 = 0.056 < b's 0.124.
		{"nine tenths there: the partial's node", 10, 9e8, "a"},
		// a: 0.044 + 0.12*0.9 = 0.152 > 0.124: a tenth is not worth 10 sessions.
		{"a tenth there: load wins", 10, 1e8, "b"},
		// a: 0.008 + 0.12*0.9 = 0.116 < b's 0.124 (without it a: 0.128).
		{"a tenth there, a session busier: the partial's node", 1, 1e8, "a"},
		// a: 0.2 + 0.004 + 0.012 = 0.216 > 0.124: a is too busy even for the rest.
		{"nine tenths there but a much busier", 50, 9e8, "b"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := partialSched(t, c.busyA, c.stored)
			res := placeFilm(t, s)
			if res.NodeID != c.want || !res.Fill {
				t.Fatalf("placed on %s (fill %v), want a fill on %s", res.NodeID, res.Fill, c.want)
			}
		})
	}
}

func TestLallPartialIsNoCopy(t *testing.T) {
	s := partialSched(t, 0, 9e8)
	if h := s.Holders("film"); len(h) != 0 {
		t.Fatalf("a partial counts as a replica: holders %v", h)
	}
	if p, ok := s.Partial("a", "film"); !ok || p.Bytes != 9e8 {
		t.Fatalf("Partial(a, film) = %+v, %v", p, ok)
	}
	// b holds the title, idle: a holder beats a fill, even of a tenth.
	if err := s.SetReplica("b", "film", false, 1e9); err != nil {
		t.Fatal(err)
	}
	if res := placeFilm(t, s); res.NodeID != "b" || res.Fill {
		t.Fatalf("placed on %s (fill %v), want b's copy", res.NodeID, res.Fill)
	}
}

func TestLallPartialNodeMustBeEligible(t *testing.T) {
	s := partialSched(t, 0, 9e8)
	if err := s.SetDraining("a", true); err != nil {
		t.Fatal(err)
	}
	if res := placeFilm(t, s); res.NodeID != "b" {
		t.Fatalf("placed on draining a's partial: %s", res.NodeID)
	}
	s = partialSched(t, 0, 9e8)
	s.Nodes[0].Capacity.DiskBytes = 5e8 // no room for the whole title
	s.touch(s.Nodes[0])
	if res := placeFilm(t, s); res.NodeID != "b" {
		t.Fatalf("placed on a without room for the title: %s", res.NodeID)
	}
	// Every origin channel busy (FillNeedsChannel): no fill at all, a
	// partial's included.
	s = sched(t, "lall", func(c *Config) { c.OriginChannels, c.FillNeedsChannel = 1, true }, 1e9, 1e9)
	if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "busy", Bytes: 1, Filling: true}}, Partials: []Partial{{Title: "film", Bytes: 9e8, Size: 1e9}}}, t0); err != nil {
		t.Fatal(err)
	}
	r := Request{Title: "film", Bitrate: 4e6, Bytes: 1e9}
	if res, err := s.Place(&r, t0); err == nil {
		t.Fatalf("placed a fill on %s with every origin channel busy", res.NodeID)
	}
}

func TestPartialsFollowReports(t *testing.T) {
	s := partialSched(t, 0, 9e8)
	// A report without titles (nil) leaves the partials as they are.
	if err := s.Heartbeat("a", Report{}, t0); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Partial("a", "film"); !ok {
		t.Fatal("a report without titles dropped the partials")
	}
	// Malformed entries are skipped: no size, no byte, more than the size.
	if err := s.Heartbeat("a", Report{Titles: []Holding{}, Partials: []Partial{
		{Title: "film", Bytes: 2e9, Size: 1e9}, {Title: "x", Bytes: 0, Size: 10}, {Title: "y", Bytes: 5, Size: 0}, {Bytes: 1, Size: 2},
		{Title: "z", Bytes: 1, Size: 2},
	}}, t0); err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"film", "x", "y", ""} {
		if _, ok := s.Partial("a", title); ok {
			t.Fatalf("malformed partial of %q kept", title)
		}
	}
	if len(s.partialAt) != 1 || len(s.partialAt["z"]) != 1 {
		t.Fatalf("partial index %v, want z on a only", s.partialAt)
	}
	// A node removed takes its partials with it.
	s.MarkDead("a")
	if err := s.RemoveNode("a"); err != nil {
		t.Fatal(err)
	}
	if len(s.partialAt) != 0 {
		t.Fatalf("removed node's partials still indexed: %v", s.partialAt)
	}
}

// Policies other than lall do not look at partials: rr turns as usual.
func TestRRIgnoresPartials(t *testing.T) {
	s := sched(t, "rr", nil, 1e9, 1e9)
	if err := s.Heartbeat("b", Report{Titles: []Holding{}, Partials: []Partial{{Title: "film", Bytes: 9e8, Size: 1e9}}}, t0); err != nil {
		t.Fatal(err)
	}
	if got := seq(t, s, 4, same(""), 4e6); got != "abab" {
		t.Fatalf("rr with a partial on b: %s", got)
	}
}

// DropPartial forgets a node's partial at once (its removal ordered): the
// next placement of its title goes by load alone, as without it; a report
// listing it again brings it back. Unknown node: ErrUnknownNode.
func TestDropPartial(t *testing.T) {
	s := partialSched(t, 10, 9e8)
	if err := s.DropPartial("a", "film"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Partial("a", "film"); ok {
		t.Fatal("partial still known after DropPartial")
	}
	if err := s.DropPartial("a", "film"); err != nil {
		t.Errorf("dropping it again: %v", err)
	}
	if res := placeFilm(t, s); res.NodeID != "b" {
		t.Errorf("placed on %s after the partial was dropped, want b (the idler node)", res.NodeID)
	}
	if err := s.DropPartial("zz", "film"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v, want ErrUnknownNode", err)
	}
	if err := s.Heartbeat("a", Report{Titles: []Holding{}, Partials: []Partial{{Title: "film", Bytes: 9e8, Size: 1e9}}}, t0); err != nil {
		t.Fatal(err)
	}
	if p, ok := s.Partial("a", "film"); !ok || p.Bytes != 9e8 {
		t.Errorf("partial after a report listed it again: %+v %v", p, ok)
	}
}
