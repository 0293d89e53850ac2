package lsm

import (
	"errors"
	"fmt"
	"testing"
)

// diskNodes returns a scheduler of policy p with nodes a and b, each of
// 1 Gbit/s and a budget (disk_bytes) of 200 MB.
func diskNodes(t *testing.T, p string) *Scheduler {
	t.Helper()
	s, err := New(func() Config { c := DefaultConfig(); c.Policy = p; return c }())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := s.AddNode(NodeSpec{ID: id, Capacity: Capacity{EgressBps: 1e9, DiskBytes: 200e6}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A node whose budget has room but whose file system has not (it reports
// 0.2 MB free and holds a 1 MB title it could evict) takes no fill of a
// 1.5 MB title it lacks, under every policy; it still takes viewers of the
// title it holds. With no other node, the fill is refused.
func TestReportedFreeDiskBoundsTheRoom(t *testing.T) {
	for _, p := range Policies() {
		s := diskNodes(t, p)
		small := Report{DiskFreeBytes: 0.2e6, DiskFreeKnown: true, Titles: []Holding{{Title: "held", Bytes: 1e6}}}
		if err := s.Heartbeat("a", small, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.Heartbeat("b", Report{DiskFreeBytes: 150e6, DiskFreeKnown: true, Titles: []Holding{}}, t0); err != nil {
			t.Fatal(err)
		}
		a := s.Node("a").Index
		if s.Eligible(a, &Request{Title: "new", Bitrate: 4e6, Bytes: 1.5e6}) {
			t.Fatalf("%s: a is eligible for a 1.5 MB fill with 1.2 MB of room (0.2 MB free, 1 MB evictable)", p)
		}
		if !s.Eligible(a, &Request{Title: "new", Bitrate: 4e6, Bytes: 1.2e6}) {
			t.Fatalf("%s: a is not eligible for a 1.2 MB fill with 1.2 MB of room", p)
		}
		if !s.Eligible(a, &Request{Title: "held", Bitrate: 4e6, Bytes: 1e6}) {
			t.Fatalf("%s: a is not eligible for the title it holds", p)
		}
		for i := range 20 {
			r := Request{Title: fmt.Sprint("new", i), Client: fmt.Sprint("c", i), Bitrate: 4e6, Bytes: 1.5e6}
			res, err := s.Place(&r, t0)
			if errors.Is(err, ErrNoCapacity) && (p == "dh" || p == "sh") {
				continue // IPVS's dh and sh do not fall back to another node
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if res.NodeID == "a" {
				t.Fatalf("%s: a 1.5 MB fill placed on the node with 1.2 MB of room", p)
			}
			s.Release(res)
			s.DropReplica(res.NodeID, r.Title) // the viewer gave up before the fill began
		}
		if err := s.SetDraining("b", true); err != nil {
			t.Fatal(err)
		}
		r := Request{Title: "new", Client: "x", Bitrate: 4e6, Bytes: 1.5e6}
		if res, err := s.Place(&r, t0); !errors.Is(err, ErrNoCapacity) {
			t.Fatalf("%s: with b drained, a 1.5 MB fill placed %+v, %v; want ErrNoCapacity", p, res, err)
		}
		r = Request{Title: "held", Client: "x", Bitrate: 4e6, Bytes: 1e6}
		if res, err := s.Place(&r, t0); err != nil || res.NodeID != "a" || res.Fill {
			t.Fatalf("%s: with b drained, a viewer of the title a holds placed %+v, %v; want a, no fill", p, res, err)
		}
	}
}

// Between two reports, a fill booked on a node takes its bytes from the
// room the report gave, one given up gives them back, and an eviction
// leaves the room as it was (the evicted bytes become free).
func TestRoomFollowsFillsAndEvictionsBetweenReports(t *testing.T) {
	s := diskNodes(t, DefaultConfig().Policy)
	if err := s.Heartbeat("a", Report{DiskFreeBytes: 2e6, DiskFreeKnown: true, Titles: []Holding{{Title: "old", Bytes: 1e6}}}, t0); err != nil {
		t.Fatal(err)
	}
	a := s.Node("a").Index
	want := func(bytes int64, ok bool, when string) {
		t.Helper()
		if got := s.Eligible(a, &Request{Title: "other", Bitrate: 4e6, Bytes: bytes}); got != ok {
			t.Fatalf("%s: eligible for a fill of %d bytes: %v, want %v", when, bytes, got, ok)
		}
	}
	want(3e6, true, "2 MB free, 1 MB evictable")
	want(3e6+1, false, "2 MB free, 1 MB evictable")
	if err := s.SetReplica("a", "fill", true, 1.5e6); err != nil {
		t.Fatal(err)
	}
	want(1.5e6, true, "a 1.5 MB fill booked")
	want(1.5e6+1, false, "a 1.5 MB fill booked")
	if err := s.DropReplica("a", "old"); err != nil { // evicted
		t.Fatal(err)
	}
	want(1.5e6, true, "the evictable title evicted")
	want(1.5e6+1, false, "the evictable title evicted")
	if err := s.DropReplica("a", "fill"); err != nil { // given up
		t.Fatal(err)
	}
	want(3e6, true, "the fill given up")
	// A report that does not give the free disk (the simulator's nodes):
	// the budget alone, 200 MB less nothing in use.
	if err := s.Heartbeat("a", Report{Titles: []Holding{}}, t0); err != nil {
		t.Fatal(err)
	}
	want(200e6, true, "free disk unknown")
	want(200e6+1, false, "free disk unknown")
}

// A fill in progress counts once: its report gives its whole size
// (Holding.Bytes, filling) and the node's free disk less the bytes it has
// still to write; the room is that free disk plus the titles it could
// evict, however many reports say the same, and the fill's bytes become
// evictable once it completes and nobody plays it.
func TestFillInProgressCountedOnce(t *testing.T) {
	s := diskNodes(t, DefaultConfig().Policy)
	a := s.Node("a").Index
	rep := Report{DiskFreeBytes: 1e6, DiskFreeKnown: true, Titles: []Holding{
		{Title: "filling", Bytes: 1.5e6, Filling: true}, {Title: "old", Bytes: 1e6}}}
	for i := range 3 {
		if err := s.Heartbeat("a", rep, t0); err != nil {
			t.Fatal(err)
		}
		if got := roomBytes(s.Nodes[a]); got != 2e6 {
			t.Fatalf("report %d: room %d with 1 MB free and 1 MB evictable, want 2000000", i, got)
		}
	}
	rep.Titles[0].Filling = false
	if err := s.Heartbeat("a", rep, t0); err != nil {
		t.Fatal(err)
	}
	if got := roomBytes(s.Nodes[a]); got != 3.5e6 {
		t.Fatalf("room %d with the fill complete and unplayed, want 3500000", got)
	}
}
