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
