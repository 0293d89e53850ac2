package lsm

import (
	"errors"
	"testing"
)

// A prefetch the node would stop for a fill on demand
// (Holding.Preemptible) is room for a viewer's fill under every policy;
// the same fill not preemptible, or played by a viewer, is not. Its bytes
// leave InUseBytes while it is preemptible and come back when a viewer
// joins it, and the flag goes when the fill completes.
func TestPreemptiblePrefetchIsRoom(t *testing.T) {
	for _, p := range Policies() {
		s, err := New(func() Config { c := DefaultConfig(); c.Policy = p; return c }())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddNode(NodeSpec{ID: "a", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 10e9}}, t0); err != nil {
			t.Fatal(err)
		}
		report := func(preemptible, filling bool) {
			t.Helper()
			r := Report{DiskFreeBytes: 2e9, DiskFreeKnown: true,
				Titles: []Holding{{Title: "pre", Bytes: 8e9, Filling: filling, Preemptible: preemptible}}}
			if err := s.Heartbeat("a", r, t0); err != nil {
				t.Fatal(err)
			}
		}
		n := s.Node("a")
		want := func(what string, inUse int64, fits bool) {
			t.Helper()
			if n.InUseBytes != inUse {
				t.Fatalf("%s, %s: in use %d bytes, want %d", p, what, n.InUseBytes, inUse)
			}
			r := Request{Title: "new", Client: "c-new", Bitrate: 4e6, Bytes: 4e9}
			res, err := s.Place(&r, t0)
			switch {
			case fits && err != nil:
				t.Fatalf("%s, %s: a 4 GB fill beside it refused: %v", p, what, err)
			case !fits && !errors.Is(err, ErrNoCapacity):
				t.Fatalf("%s, %s: a 4 GB fill beside it: %v, %+v, want ErrNoCapacity", p, what, err, res)
			}
			if err == nil {
				s.Release(res)
				s.DropReplica("a", r.Title) // the viewer gave up before the fill began
			}
		}
		report(false, true)
		want("a prefetch not preemptible", 8e9, false)
		report(true, true)
		want("a preemptible prefetch", 0, true)

		r := Request{Title: "pre", Client: "c-pre", Bitrate: 4e6, Bytes: 8e9}
		res, err := s.Place(&r, t0)
		if err != nil || res.NodeID != "a" {
			t.Fatalf("%s: viewer of the prefetched title: %+v, %v", p, res, err)
		}
		want("a preemptible prefetch a viewer joined", 8e9, false)
		s.Release(res)
		if n.InUseBytes != 0 {
			t.Fatalf("%s: viewer of the preemptible prefetch gone: in use %d, want 0", p, n.InUseBytes)
		}
		report(true, false) // complete: a flag left over is dropped
		if got, _ := n.Holds("pre"); got || n.titles["pre"].preemptible {
			t.Fatalf("%s: complete title still filling or preemptible", p)
		}
		want("the prefetch complete", 0, true)
	}
}

// A viewer of a preemptible prefetch makes its bytes in use: a node whose
// room for a fill placed since counts on them (the node will stop the
// prefetch for that fill) does not take that viewer, which would leave
// the node two titles in use where it has room for one (whichever
// reaches it second fails there). Once that fill is gone, it does.
func TestViewerOfPreemptiblePrefetchWhoseRoomIsTaken(t *testing.T) {
	for _, p := range Policies() {
		s, err := New(func() Config { c := DefaultConfig(); c.Policy = p; return c }())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddNode(NodeSpec{ID: "a", Capacity: Capacity{EgressBps: 1e9, DiskBytes: 10e9}}, t0); err != nil {
			t.Fatal(err)
		}
		r := Report{DiskFreeBytes: 2e9, DiskFreeKnown: true,
			Titles: []Holding{{Title: "pre", Bytes: 8e9, Filling: true, Preemptible: true}}}
		if err := s.Heartbeat("a", r, t0); err != nil {
			t.Fatal(err)
		}
		fill := Request{Title: "new", Client: "c-new", Bitrate: 4e6, Bytes: 4e9}
		fres, err := s.Place(&fill, t0)
		if err != nil {
			t.Fatalf("%s: a fill counting on the preemptible prefetch's room: %v", p, err)
		}
		join := Request{Title: "pre", Client: "c-pre", Bitrate: 4e6, Bytes: 8e9}
		if res, err := s.Place(&join, t0); !errors.Is(err, ErrNoCapacity) {
			t.Fatalf("%s: viewer of the prefetch whose room a fill took: %+v, %v, want ErrNoCapacity", p, res, err)
		}
		if n := s.Node("a"); n.InUseBytes > n.Capacity.DiskBytes {
			t.Fatalf("%s: %d bytes in use on a disk of %d", p, n.InUseBytes, n.Capacity.DiskBytes)
		}
		s.Release(fres)
		s.DropReplica("a", fill.Title)
		res, err := s.Place(&join, t0)
		if err != nil {
			t.Fatalf("%s: viewer of the prefetch once the fill is gone: %v", p, err)
		}
		s.Release(res)
	}
}
