package lsm

import (
	"fmt"
	"testing"
	"time"
)

// The fills of a node that died hold no origin channel: with
// FillNeedsChannel, a request for a title no live node holds is placed
// while the only fill in the view is on a dead node.
func TestDeadNodeFillHoldsNoChannel(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6)
	s.Config.OriginChannels = 1
	s.Config.FillNeedsChannel = true
	res, err := s.Place(&Request{Title: "cold-1", Bitrate: 4e6}, t0)
	if err != nil || !res.Fill {
		t.Fatalf("first fill: %+v %v", res, err)
	}
	other := "a"
	if res.NodeID == "a" {
		other = "b"
	}
	s.Release(res) // its viewer's session ends with the node
	late := t0.Add(time.Minute)
	if err := s.Heartbeat(other, Report{Titles: []Holding{}}, late); err != nil {
		t.Fatal(err)
	}
	if dead := s.Tick(late); len(dead) != 1 || dead[0].ID != res.NodeID {
		t.Fatalf("dead: %v", dead)
	}
	tk, err := s.Admit(Request{Title: "cold-2", Bitrate: 4e6}, late.Add(5*time.Second), late)
	if err != nil {
		t.Fatal(err)
	}
	s.Pump(late.Add(time.Second))
	if !tk.Done || tk.Err != nil {
		t.Errorf("cold-2 with node %s idle and the only fill on a dead node: done=%v err=%v LiveFilling()=%d, want placed", other, tk.Done, tk.Err, s.LiveFilling())
	}
}

// A node out of service while unreachable is back in the hash policies'
// tables when it reports again (the change bumps Version).
func TestUnreachableNodeBackInHashTables(t *testing.T) {
	for _, policy := range []string{"dh", "sh", "mh", "chbl"} {
		t.Run(policy, func(t *testing.T) {
			s := newTestScheduler(t, policy, 1e12, 1e12)
			if err := s.SetUnreachable("a"); err != nil {
				t.Fatal(err)
			}
			if err := s.SetWeight("b", 100); err != nil { // any node event: the table is rebuilt without a
				t.Fatal(err)
			}
			if _, err := s.Place(&Request{Title: "x", Bitrate: 1}, t0); err != nil {
				t.Fatal(err)
			}
			if err := s.Heartbeat("a", Report{}, t0.Add(time.Second)); err != nil { // a reports again
				t.Fatal(err)
			}
			onA := 0
			for i := range 200 {
				r := Request{Title: fmt.Sprintf("title-%d", i), Client: fmt.Sprintf("10.0.0.%d", i), Bitrate: 1}
				if res, err := s.Place(&r, t0.Add(time.Second)); err == nil && res.NodeID == "a" {
					onA++
				}
			}
			if onA == 0 {
				t.Errorf("node a back in service, 0 of 200 new sessions on it")
			}
		})
	}
}

// LiveFilling counts only the fills of alive nodes also while they are
// fewer than the origin's channels (the manager's vodcluster_fills: a
// node killed during a fill showed it in progress, with no transfer at
// the origin, until the node came back).
func TestLiveFillingLeavesOutDeadNodeBelowChannels(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6)
	s.Config.OriginChannels = 4
	s.Config.FillNeedsChannel = true
	res, err := s.Place(&Request{Title: "cold-1", Bitrate: 4e6}, t0)
	if err != nil || !res.Fill {
		t.Fatalf("first fill: %+v %v", res, err)
	}
	if got := s.LiveFilling(); got != 1 {
		t.Fatalf("LiveFilling with one fill on an alive node = %d, want 1", got)
	}
	other := "a"
	if res.NodeID == "a" {
		other = "b"
	}
	late := t0.Add(time.Minute)
	if err := s.Heartbeat(other, Report{Titles: []Holding{}}, late); err != nil {
		t.Fatal(err)
	}
	if dead := s.Tick(late); len(dead) != 1 || dead[0].ID != res.NodeID {
		t.Fatalf("dead: %v", dead)
	}
	if got := s.LiveFilling(); got != 0 {
		t.Errorf("LiveFilling with the only fill on dead node %s = %d, want 0", res.NodeID, got)
	}
}

// The default policy's shortcut for a busy origin (a holder takes the
// session whatever its load rather than order a fill that would wait for
// a channel) counts only the fills of alive nodes: with one channel and
// the only fill in the view on a dead node, a session for a title whose
// holder is dearer than a fill goes to a fill, as it does without the
// dead node's fill.
func TestLallFullOriginLeavesOutDeadNodeFills(t *testing.T) {
	place := func(deadFill bool) Reservation {
		s := newTestScheduler(t, "lall", 100e6, 100e6, 100e6)
		s.Config.OriginChannels = 1
		s.Config.A = 0.1 // a fill costs less than a tenth of a session more: b's first viewer's load outweighs it
		if err := s.SetReplica("b", "film", false, 1); err != nil {
			t.Fatal(err)
		}
		now := t0
		if deadFill {
			if err := s.SetReplica("c", "cold", true, 1); err != nil {
				t.Fatal(err)
			}
			now = t0.Add(time.Minute)
			if err := s.Heartbeat("a", Report{Titles: []Holding{}}, now); err != nil {
				t.Fatal(err)
			}
			if err := s.Heartbeat("b", Report{Titles: []Holding{{Title: "film", Bytes: 1}}}, now); err != nil {
				t.Fatal(err)
			}
			if dead := s.Tick(now); len(dead) != 1 || dead[0].ID != "c" {
				t.Fatalf("dead: %v", dead)
			}
		}
		if res, err := s.Place(&Request{Title: "film", Bitrate: 2e6}, now); err != nil || res.NodeID != "b" {
			t.Fatalf("first viewer: %+v %v, want the holder b", res, err)
		}
		res, err := s.Place(&Request{Title: "film", Bitrate: 2e6}, now)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := place(false); !res.Fill || res.NodeID == "b" {
		t.Fatalf("second viewer without a dead node's fill: %+v, want a fill on a or c", res)
	}
	if res := place(true); !res.Fill || res.NodeID != "a" {
		t.Errorf("second viewer, the only fill in the view on dead node c: %+v, want a fill on a (c's fill holds no origin channel)", res)
	}
}

// A prefetch no viewer plays (Holding.Preemptible) holds no origin
// channel of the budget: the origin gives its channel to a viewer's fill.
// With one channel taken by such a prefetch, a viewer of a title no node
// holds is placed with a fill at once; a second one waits, the channel
// now the first fill's, and so does a viewer of the prefetch's title, who
// would make it a fill with no channel (it played the prefetch's bytes
// and stalled). The prefetch counts again once a viewer plays it or it is
// pinned. Before, the prefetch kept every viewer of a cold title waiting
// until it completed.
func TestPrefetchHoldsNoOriginChannel(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6)
	s.Config.OriginChannels = 1
	s.Config.FillNeedsChannel = true
	prefetch := Holding{Title: "promo", Bytes: 1e6, Filling: true, Preemptible: true}
	if err := s.Heartbeat("a", Report{Titles: []Holding{prefetch}}, t0); err != nil {
		t.Fatal(err)
	}
	checkViews(t, s)
	if s.LiveFilling() != 1 || s.OriginChannelsBusy() {
		t.Fatalf("a prefetch on the only channel: LiveFilling %d, busy %v; want 1, not busy", s.LiveFilling(), s.OriginChannelsBusy())
	}
	tk, err := s.Admit(Request{Title: "cold-1", Bitrate: 4e6}, t0.Add(5*time.Second), t0)
	if err != nil {
		t.Fatal(err)
	}
	if !tk.Done || tk.Err != nil || !tk.Res.Fill {
		t.Fatalf("cold-1 with a prefetch on the only channel: done=%v err=%v %+v, want placed with a fill", tk.Done, tk.Err, tk.Res)
	}
	checkViews(t, s)
	if !s.OriginChannelsBusy() {
		t.Fatal("the channel taken by cold-1's fill: not busy")
	}
	tk2, err := s.Admit(Request{Title: "cold-2", Bitrate: 4e6}, t0.Add(5*time.Second), t0)
	if err != nil {
		t.Fatal(err)
	}
	if tk2.Done {
		t.Fatalf("cold-2 placed (%+v, %v) with cold-1's fill on the only channel", tk2.Res, tk2.Err)
	}
	// A viewer of the prefetch would make it a fill, with no channel (it
	// would play the prefetch's bytes and stall): it waits too.
	if k := s.HoldersInServiceFor(&Request{Title: "promo"}); k != 0 {
		t.Errorf("holders of the prefetch with every channel taken: %d, want 0", k)
	}
	tkp, err := s.Admit(Request{Title: "promo", Bitrate: 4e6}, t0.Add(5*time.Second), t0)
	if err != nil {
		t.Fatal(err)
	}
	if tkp.Done {
		t.Fatalf("a viewer of the prefetch placed (%+v, %v) with cold-1's fill on the only channel", tkp.Res, tkp.Err)
	}
	for i, k := range []*Ticket{tk, tk2} {
		s.Release(k.Res)
		s.SetReplica(k.Res.NodeID, k.Req.Title, false, 1e6) // its fill completed
		s.Pump(t0.Add(time.Duration(i+1) * time.Second))
		if next := []*Ticket{tk2, tkp}[i]; !next.Done || next.Err != nil {
			t.Fatalf("%s once %s's fill completed: done=%v err=%v", next.Req.Title, k.Req.Title, next.Done, next.Err)
		}
		checkViews(t, s)
	}
	if tkp.Res.NodeID != "a" || tkp.Res.Fill {
		t.Fatalf("the prefetch's viewer: %+v, want joining the prefetch on a", tkp.Res)
	}

	// The viewer makes the prefetch a fill that keeps its channel, as a
	// pin does.
	if !s.OriginChannelsBusy() {
		t.Fatal("a prefetch a viewer plays: channel not busy")
	}
	s.Release(tkp.Res)
	checkViews(t, s)
	if s.OriginChannelsBusy() {
		t.Fatal("the prefetch's viewer gone: channel still busy")
	}
	if err := s.SetPinned("a", "promo", true); err != nil {
		t.Fatal(err)
	}
	checkViews(t, s)
	if !s.OriginChannelsBusy() {
		t.Fatal("a pinned prefetch: channel not busy")
	}
	if err := s.SetPinned("a", "promo", false); err != nil {
		t.Fatal(err)
	}
	s.SetReplica("a", "promo", false, 1e6) // the prefetch completed
	checkViews(t, s)
	if s.OriginChannelsBusy() || s.LiveFilling() != 0 {
		t.Fatalf("no fill left: busy %v, LiveFilling %d", s.OriginChannelsBusy(), s.LiveFilling())
	}
}
