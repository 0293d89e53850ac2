package lsm

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func newTestScheduler(t *testing.T, policy string, nodes ...int64) *Scheduler {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = policy
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, bps := range nodes {
		if _, err := s.AddNode(NodeSpec{ID: string(rune('a' + i)), Capacity: Capacity{EgressBps: bps}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestLallPrefersHolderThenLeastLoad(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6, 100e6)
	s.SetReplica("b", "film", false, 1)
	r := Request{Title: "film", Bitrate: 4e6}
	res, err := s.Place(&r, t0)
	if err != nil || res.NodeID != "b" || res.Fill {
		t.Fatalf("holder not chosen: %+v %v", res, err)
	}
	// A title nobody holds goes to the least loaded node (a or c), as a fill.
	r2 := Request{Title: "other", Bitrate: 4e6}
	res2, _ := s.Place(&r2, t0)
	if res2.NodeID == "b" || !res2.Fill {
		t.Fatalf("unheld title: %+v", res2)
	}
	// The second request for it shares the fill on the same node.
	res3, _ := s.Place(&r2, t0)
	if res3.NodeID != res2.NodeID || res3.Fill {
		t.Fatalf("second viewer of a filling title: %+v, first on %s", res3, res2.NodeID)
	}
}

func TestNeverAboveCapacity(t *testing.T) {
	for _, p := range Policies() {
		s := newTestScheduler(t, p, 10e6, 20e6)
		admitted := 0
		for i := 0; i < 100; i++ {
			r := Request{Title: "t" + string(rune('a'+i%7)), Client: "c" + string(rune('a'+i%13)), Bitrate: 3e6}
			if _, err := s.Place(&r, t0); err == nil {
				admitted++
			} else if !errors.Is(err, ErrNoCapacity) {
				t.Fatalf("%s: %v", p, err)
			}
		}
		for _, n := range s.Nodes {
			if n.ReservedBps > n.Capacity.EgressBps {
				t.Fatalf("%s: node %s reserved %d > capacity %d", p, n.ID, n.ReservedBps, n.Capacity.EgressBps)
			}
		}
		if admitted != 3+6 {
			t.Fatalf("%s: admitted %d, want 9", p, admitted)
		}
	}
}

func TestDeadAndDrainedGetNothing(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6)
	s.Heartbeat("b", Report{}, t0.Add(2*time.Second))
	dead := s.Tick(t0.Add(4 * time.Second))
	if len(dead) != 1 || dead[0].ID != "a" {
		t.Fatalf("dead = %v", dead)
	}
	r := Request{Title: "x", Bitrate: 1e6}
	if res, _ := s.Place(&r, t0); res.NodeID != "b" {
		t.Fatalf("placed on %s", res.NodeID)
	}
	s.SetDraining("b", true)
	if _, err := s.Place(&r, t0); !errors.Is(err, ErrNoNode) {
		t.Fatalf("err %v, want ErrNoNode", err)
	}
}

func TestQueueFCFSAndDeadline(t *testing.T) {
	s := newTestScheduler(t, "lall", 10e6)
	first, _ := s.Admit(Request{Title: "a", Bitrate: 8e6}, t0.Add(time.Second), t0)
	if !first.Done || first.Err != nil {
		t.Fatalf("first: %+v", first)
	}
	w1, _ := s.Admit(Request{Title: "b", Bitrate: 8e6}, t0.Add(5*time.Second), t0)
	w2, _ := s.Admit(Request{Title: "c", Bitrate: 8e6}, t0.Add(2*time.Second), t0)
	if w1.Done || w2.Done || s.Queued() != 2 {
		t.Fatal("should wait")
	}
	if d, _ := s.NextDeadline(); !d.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("next deadline %v", d)
	}
	s.Release(first.Res)
	done := s.Pump(t0.Add(time.Second))
	if len(done) != 1 || done[0] != w1 || w1.Err != nil {
		t.Fatalf("FCFS broken: %+v", done)
	}
	done = s.Pump(t0.Add(2 * time.Second))
	if len(done) != 1 || done[0] != w2 || !errors.Is(w2.Err, ErrDeadline) {
		t.Fatalf("deadline: %+v", done)
	}
	if s.Queued() != 0 {
		t.Fatal("queue not empty")
	}
}

func TestSetPolicyKeepsReservations(t *testing.T) {
	s := newTestScheduler(t, "lall", 10e6)
	r := Request{Title: "a", Bitrate: 4e6}
	res, _ := s.Place(&r, t0)
	if err := s.SetPolicy("rr"); err != nil {
		t.Fatal(err)
	}
	if s.Nodes[0].ReservedBps != 4e6 {
		t.Fatal("reservation lost")
	}
	s.Release(res)
	if s.Nodes[0].ReservedBps != 0 || s.Nodes[0].Sessions != 0 {
		t.Fatal("release after switch")
	}
	if err := s.SetPolicy("nope"); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

func TestOperatorWeightSurvivesReregistration(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6)
	if err := s.SetWeight("a", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNode(NodeSpec{ID: "a", Capacity: Capacity{EgressBps: 100e6}, Weight: 100}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if w := s.Node("a").Weight; w != 0 {
		t.Fatalf("weight after re-registration %d, want the operator's 0", w)
	}
	if w := s.Node("b").Weight; w != DefaultWeight {
		t.Fatalf("untouched node weight %d", w)
	}
}

// New titles spread over empty disks instead of piling onto one node.
func TestLallSpreadsFillsOverFreeDisks(t *testing.T) {
	cfg := DefaultConfig()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.AddNode(NodeSpec{ID: id, Capacity: Capacity{EgressBps: 100e6, DiskBytes: 10e6}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for i := 0; i < 3; i++ {
		r := Request{Title: fmt.Sprintf("t%d", i), Bitrate: 6e5, Bytes: 3e6}
		res, err := s.Place(&r, t0)
		if err != nil {
			t.Fatal(err)
		}
		s.Release(res) // the session ends; the title stays on disk
		s.SetReplica(res.NodeID, r.Title, false, r.Bytes)
		seen[res.NodeID]++
	}
	if len(seen) != 3 {
		t.Fatalf("three new titles filled on %v, want one per empty disk", seen)
	}
}

// With FillNeedsChannel, a request that would need a fill while every
// origin channel is taken waits in the queue (for every policy), one for
// a title a node holds or fills is placed there, and the waiting one is
// placed by Pump once a fill completes.
func TestFillNeedsChannel(t *testing.T) {
	for _, policy := range []string{"lall", "rr", "wlc", "lblc", "chbl"} {
		t.Run(policy, func(t *testing.T) {
			s := newTestScheduler(t, policy, 100e6, 100e6)
			s.Config.OriginChannels = 1
			s.Config.FillNeedsChannel = true
			first, err := s.Place(&Request{Title: "cold-1", Bitrate: 4e6}, t0)
			if err != nil || !first.Fill {
				t.Fatalf("first cold title: %+v %v", first, err)
			}
			waiting, err := s.Admit(Request{Title: "cold-2", Bitrate: 4e6}, t0.Add(5*time.Second), t0)
			if err != nil || waiting.Done {
				t.Fatalf("a second fill with the only channel taken: %+v %v, want it queued", waiting, err)
			}
			if res, err := s.Place(&Request{Title: "cold-1", Bitrate: 4e6}, t0); err != nil || res.Fill || res.NodeID != first.NodeID {
				t.Fatalf("a viewer of the title being filled: %+v %v, want its filling node", res, err)
			}
			if err := s.SetReplica(first.NodeID, "cold-1", false, 1); err != nil { // the fill completes
				t.Fatal(err)
			}
			done := s.Pump(t0.Add(time.Second))
			if len(done) != 1 || done[0] != waiting || waiting.Err != nil || !waiting.Res.Fill {
				t.Fatalf("after the fill completed: %+v", waiting)
			}
		})
	}
}

// A node that reports a disk fault takes sessions of the titles it holds
// and no new fill.
func TestDiskFaultNodeTakesNoFill(t *testing.T) {
	s := newTestScheduler(t, "lall", 100e6, 100e6)
	if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "held", Bytes: 1}}, DiskFault: true}, t0); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		res, err := s.Place(&Request{Title: fmt.Sprint("cold-", i), Bitrate: 4e6}, t0)
		if err != nil || res.NodeID != "b" || !res.Fill {
			t.Fatalf("cold title: %+v %v, want a fill on b", res, err)
		}
	}
	if res, err := s.Place(&Request{Title: "held", Bitrate: 4e6}, t0); err != nil || res.NodeID != "a" || res.Fill {
		t.Fatalf("title the faulty node holds: %+v %v, want a", res, err)
	}
	if err := s.Heartbeat("a", Report{Titles: []Holding{{Title: "held", Bytes: 1}}}, t0); err != nil {
		t.Fatal(err)
	}
	if s.Node("a").DiskFault {
		t.Fatal("fault not cleared by a report without it")
	}
}

// A scheduler with no node refuses a request (ErrNoNode; queued by Admit)
// under every policy, without touching structures built for nodes.
func TestNoNodeYet(t *testing.T) {
	for _, policy := range Policies() {
		t.Run(policy, func(t *testing.T) {
			s := newTestScheduler(t, policy)
			if _, err := s.Place(&Request{Title: "t", Client: "c", Bitrate: 4e6, Bytes: 1e6}, t0); err != ErrNoNode {
				t.Fatalf("Place with no node: %v, want ErrNoNode", err)
			}
			tk, err := s.Admit(Request{Title: "t", Client: "c", Bitrate: 4e6, Bytes: 1e6}, t0.Add(time.Second), t0)
			if err != nil || tk.Done {
				t.Fatalf("Admit with no node: %+v %v, want it queued", tk, err)
			}
		})
	}
}

// An unset overload threshold is never below the normal limit: a normal
// limit above the default 0.9 raises it.
func TestOverloadDefaultFollowsNormal(t *testing.T) {
	for _, c := range []struct{ normal, want float64 }{{0.8, 0.9}, {0.95, 0.95}} {
		cfg := DefaultConfig()
		cfg.Normal, cfg.Overload = c.normal, 0
		if got := cfg.withDefaults().Overload; got != c.want {
			t.Errorf("normal %v: overload %v, want %v", c.normal, got, c.want)
		}
	}
}
