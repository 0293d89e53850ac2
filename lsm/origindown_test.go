package lsm

import (
	"errors"
	"testing"
	"time"
)

// While the origin is down (Request.OriginDown), a fill booked on a node
// for a viewer who has not reached it (or reported by the manager as
// Booked) does not make the node a holder: that fill cannot start, and a
// new viewer sent there would be refused by the node. A node whose report
// shows the title, whole or filling, still takes the viewer; once a report
// shows the booked fill, it counts. With the origin up (or every channel
// taken, NoFill alone) the booked fill is shared as before.
func TestOriginDownCountsOnlyReportedCopies(t *testing.T) {
	for _, p := range Policies() {
		s := diskNodes(t, p)
		for _, id := range []string{"a", "b"} {
			if err := s.Heartbeat(id, Report{Titles: []Holding{}}, t0); err != nil {
				t.Fatal(err)
			}
		}
		// A viewer placed with a fill on some node, not arrived yet.
		first := Request{Title: "t", Client: "c0", Bitrate: 4e6, Bytes: 1e6}
		res, err := s.Place(&first, t0)
		if err != nil || !res.Fill {
			t.Fatalf("%s: first viewer %+v, %v; want a fill", p, res, err)
		}
		booked := s.Node(res.NodeID).Index
		down := Request{Title: "t", Client: "c1", Bitrate: 4e6, Bytes: 1e6, OriginDown: true}
		if s.Eligible(booked, &down) {
			t.Fatalf("%s: origin down, the node with only a booked fill is eligible", p)
		}
		if k := s.HoldersInServiceFor(&down); k != 0 {
			t.Fatalf("%s: origin down, %d holders counted with only a booked fill, want 0", p, k)
		}
		if got, err := s.Place(&down, t0); !errors.Is(err, ErrNoCapacity) {
			t.Fatalf("%s: origin down, a viewer placed %+v, %v; want ErrNoCapacity", p, got, err)
		}
		// Every channel taken (NoFill alone): the booked fill is shared.
		busy := Request{Title: "t", Client: "c1", Bitrate: 4e6, Bytes: 1e6, NoFill: true}
		if !s.Eligible(booked, &busy) || s.HoldersInServiceFor(&busy) != 1 {
			t.Fatalf("%s: NoFill without OriginDown does not count the booked fill", p)
		}
		// The manager's report of the node still shows it booked.
		other := "a"
		if res.NodeID == "a" {
			other = "b"
		}
		rep := Report{Titles: []Holding{{Title: "t", Bytes: 1e6, Filling: true, Booked: true}}}
		if err := s.Heartbeat(res.NodeID, rep, t0); err != nil {
			t.Fatal(err)
		}
		if s.Eligible(booked, &down) {
			t.Fatalf("%s: origin down, the node reported with the fill booked is eligible", p)
		}
		// Another node holds the title whole: the viewer goes there.
		if err := s.Heartbeat(other, Report{Titles: []Holding{{Title: "t", Bytes: 1e6}}}, t0); err != nil {
			t.Fatal(err)
		}
		if k := s.HoldersInServiceFor(&down); k != 1 {
			t.Fatalf("%s: origin down, %d holders, want 1 (the whole copy)", p, k)
		}
		got, err := s.Place(&down, t0)
		if errors.Is(err, ErrNoCapacity) && (p == "dh" || p == "sh") {
			// IPVS's dh and sh do not fall back to another node.
		} else if err != nil || got.NodeID != other || got.Fill {
			t.Fatalf("%s: origin down, a viewer placed %+v, %v; want %s, no fill", p, got, err, other)
		} else {
			s.Release(got)
		}
		// The node's own report shows the fill: it counts.
		rep.Titles[0].Booked = false
		if err := s.Heartbeat(res.NodeID, rep, t0); err != nil {
			t.Fatal(err)
		}
		if !s.Eligible(booked, &down) {
			t.Fatalf("%s: origin down, the node whose report shows the fill is not eligible", p)
		}
	}
}

// A request queued while the origin is down (no node holds the title)
// is placed with a fill once SetOriginDown(false) says it is back, and one
// queued while it was up is kept to holders after SetOriginDown(true).
func TestSetOriginDownAppliesToQueued(t *testing.T) {
	s := diskNodes(t, "lall")
	for _, id := range []string{"a", "b"} {
		if err := s.Heartbeat(id, Report{Titles: []Holding{}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	tk, err := s.Admit(Request{Title: "t", Client: "c", Bitrate: 4e6, Bytes: 1e6, OriginDown: true}, t0.Add(time.Minute), t0)
	if err != nil || tk.Done {
		t.Fatalf("origin down, no holder: %+v, %v; want queued", tk, err)
	}
	if done := s.Pump(t0); len(done) != 0 {
		t.Fatalf("origin down, no holder: %d placed", len(done))
	}
	s.SetOriginDown(false)
	if done := s.Pump(t0); len(done) != 1 || !tk.Res.Fill || tk.Err != nil {
		t.Fatalf("origin back: %+v; want placed with a fill", tk)
	}
	s.Release(tk.Res)
	s.queue.items = append(s.queue.items, &Ticket{Req: Request{Title: "u", Client: "c", Bitrate: 4e6, Bytes: 1e6}, Deadline: t0.Add(time.Minute)})
	s.SetOriginDown(true)
	if !s.queue.items[0].Req.OriginDown {
		t.Fatal("origin down: the queued request is not marked")
	}
	if done := s.Pump(t0); len(done) != 0 {
		t.Fatalf("origin down, no holder of u: %+v placed", done[0])
	}
}
