package lsm

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Drain (flag or weight 0) and death hold for every policy: no new
// session goes there, and the sessions it plays stay reserved.
func TestEveryPolicyRespectsDrainWeightZeroAndDeath(t *testing.T) {
	for _, p := range Policies() {
		for _, how := range []string{"drain", "weight0", "dead"} {
			s := sched(t, p, nil, 1e9, 1e9, 1e9)
			_, res := place(t, s, "kept", "x", 5e6)
			victim := res.NodeID
			switch how {
			case "drain":
				s.SetDraining(victim, true)
			case "weight0":
				s.SetWeight(victim, 0)
			case "dead":
				s.MarkDead(victim)
			}
			for i := 0; i < 60; i++ {
				id, _ := place(t, s, fmt.Sprint("t", i%5), fmt.Sprint("c", i), 1e6)
				if id == victim {
					t.Fatalf("%s/%s: new session on %s", p, how, victim)
				}
			}
			if got := s.Node(victim).ReservedBps; got != 5e6 {
				t.Fatalf("%s/%s: playing session lost: reserved %d", p, how, got)
			}
		}
	}
}

// A node that joins after the cluster started ramps: its reservable
// egress starts at SlowStartFloor of capacity and reaches all of it after
// SlowStart, whatever the policy.
func TestEveryPolicySlowStartsAJoiningNode(t *testing.T) {
	for _, p := range Policies() {
		s := sched(t, p, nil, 1e9, 1e9)
		join := t0.Add(10 * time.Minute)
		if _, err := s.AddNode(NodeSpec{ID: "new", Capacity: Capacity{EgressBps: 1e9}}, join); err != nil {
			t.Fatal(err)
		}
		n := s.Node("new")
		if !n.SlowUntil.Equal(join.Add(30 * time.Second)) {
			t.Fatalf("%s: slow start until %v", p, n.SlowUntil)
		}
		// At the join the new node may take at most 10% of 1 Gbit/s.
		for i := 0; i < 400; i++ {
			r := Request{Title: fmt.Sprint("t", i), Client: fmt.Sprint("c", i), Bitrate: 4e6}
			if _, err := s.Place(&r, join); err != nil && !errors.Is(err, ErrNoCapacity) {
				t.Fatal(err)
			}
			if n.ReservedBps > 100e6 {
				t.Fatalf("%s: %d bit/s on a node at the start of its ramp", p, n.ReservedBps)
			}
		}
		// Half way, 55%.
		half := join.Add(15 * time.Second)
		for i := 0; i < 400; i++ {
			r := Request{Title: fmt.Sprint("u", i), Client: fmt.Sprint("d", i), Bitrate: 4e6}
			s.Place(&r, half)
			if n.ReservedBps > 550e6 {
				t.Fatalf("%s: %d bit/s half way through the ramp", p, n.ReservedBps)
			}
		}
		if s.CapBps(n.Index) != 550e6 {
			t.Fatalf("%s: cap half way %d", p, s.CapBps(n.Index))
		}
		s.Place(&Request{Title: "late", Client: "z", Bitrate: 1e6}, join.Add(time.Minute))
		if s.CapBps(n.Index) != 1e9 || s.Ramp(n.Index) != 1 {
			t.Fatalf("%s: ramp not over after the window", p)
		}
	}
}

func TestNodesJoiningWithTheClusterDoNotRamp(t *testing.T) {
	s := sched(t, "lall", nil, 1e9)
	n, _ := s.AddNode(NodeSpec{ID: "z", Capacity: Capacity{EgressBps: 1e9}}, t0.Add(20*time.Second))
	if !n.SlowUntil.IsZero() {
		t.Fatal("a node joining within the first window ramps")
	}
	// It dies and comes back later: now it ramps.
	s.MarkDead("z")
	if err := s.Heartbeat("z", Report{}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n.SlowUntil.IsZero() || !n.Alive {
		t.Fatal("a node coming back does not ramp")
	}
}

// A node whose process restarted before it was taken for dead (it
// registers again, alive, with another NodeSpec.Started) slow-starts as
// one that comes back does; the same process registering again (its
// heartbeat stream broke and reopened) does not. The restart took all of
// its capacity at once.
func TestRestartedNodeRamps(t *testing.T) {
	s := sched(t, "lall", nil, 1e9)
	first := t0.Add(-time.Hour)
	spec := NodeSpec{ID: "z", Capacity: Capacity{EgressBps: 1e9}, Started: first}
	if _, err := s.AddNode(spec, t0.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	n := s.Node("z")
	again := t0.Add(20 * time.Minute)
	if _, err := s.AddNode(spec, again); err != nil {
		t.Fatal(err)
	}
	if s.Ramp(n.Index) != 1 {
		t.Fatalf("the same process registering again ramps (%v)", s.Ramp(n.Index))
	}
	spec.Started = again.Add(-time.Second)
	if _, err := s.AddNode(spec, again); err != nil {
		t.Fatal(err)
	}
	if !n.SlowUntil.Equal(again.Add(30*time.Second)) || s.Ramp(n.Index) > 0.11 {
		t.Fatalf("a restarted process: slow start until %v, ramp %v; want 30 s from its registration, 10%% now", n.SlowUntil, s.Ramp(n.Index))
	}
	// A node that does not say when it started is taken as the same.
	spec.Started = time.Time{}
	later := again.Add(time.Hour)
	if _, err := s.AddNode(spec, later); err != nil {
		t.Fatal(err)
	}
	s.Place(&Request{Title: "t", Client: "c", Bitrate: 1e6}, later)
	if s.Ramp(n.Index) != 1 {
		t.Fatal("a registration without a start ramps")
	}
}

func TestLoadFormula(t *testing.T) {
	s := sched(t, "lall", nil, 1e9)
	s.SetReplica("a", "held", false, 1)
	s.Reserve("a", "held", 300e6)  // local: Rs = 300 Mbit/s
	s.Reserve("a", "fresh", 100e6) // new fill: Rd = 100 Mbit/s
	// U = 0.4 < Ul: L = (0.3 + 30*0.1) = 3.3
	if l := s.Load(0); l < 3.2999 || l > 3.3001 {
		t.Fatalf("load %v, want 3.3", l)
	}
	s.Heartbeat("a", Report{EgressBps: 900e6}, t0) // measured U = 0.9
	// + B/Ul * (0.9-0.8) = 1/0.8*0.1 = 0.125
	if l := s.Load(0); l < 3.4249 || l > 3.4251 {
		t.Fatalf("load %v, want 3.425", l)
	}
	if s.Overloaded(0) {
		t.Fatal("overloaded at U = 0.9 with the threshold 0.9: overload is strictly above it")
	}
	s.SetOverload("a", 0.85)
	if !s.Overloaded(0) {
		t.Fatal("per-node overload threshold ignored")
	}
	if err := s.SetOverload("a", 2); err == nil {
		t.Fatal("threshold 2 accepted")
	}
}

func TestBookkeepingOfFillsAndDisk(t *testing.T) {
	s := sched(t, "lall", nil, 1e9)
	s.Nodes[0].Capacity.DiskBytes = 100
	r := Request{Title: "x", Bitrate: 1e6, Bytes: 60}
	res, err := s.Place(&r, t0)
	if err != nil || !res.Fill {
		t.Fatal(res, err)
	}
	n := s.Nodes[0]
	if n.InUseBytes != 60 || n.FillSessions != 1 {
		t.Fatalf("after a fill: in use %d, Nd %d", n.InUseBytes, n.FillSessions)
	}
	// No room for a second 60-byte title while x is in use.
	r2 := Request{Title: "y", Bitrate: 1e6, Bytes: 60}
	if _, err := s.Place(&r2, t0); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("disk full of titles in use: %v", err)
	}
	s.SetReplica("a", "x", false, 60) // fill done
	s.Release(res)                    // viewer gone: x evictable
	if n.InUseBytes != 0 || n.Sessions != 0 || n.FillSessions != 0 || n.ReservedBps != 0 {
		t.Fatalf("after release: %+v", n)
	}
	if _, err := s.Place(&r2, t0); err != nil {
		t.Fatalf("room after release: %v", err)
	}
	s.DropReplica("a", "x")
	if f, ok := n.Holds("x"); ok || f || len(s.Holders("x")) != 0 {
		t.Fatal("dropped replica still held")
	}
}

func TestBadInput(t *testing.T) {
	cfg := DefaultConfig()
	for _, mut := range []func(*Config){
		func(c *Config) { c.Normal = 0 },
		func(c *Config) { c.Normal = 1.5 },
		func(c *Config) { c.A = -1 },
		func(c *Config) { c.Overload = 2 },
		func(c *Config) { c.SlowStart = -time.Second },
		func(c *Config) { c.LARDLow, c.LARDHigh = 0.9, 0.5 },
		func(c *Config) { c.CHBLFactor = 0.5 },
		func(c *Config) { c.Policy = "nope" },
	} {
		c := cfg
		mut(&c)
		if _, err := New(c); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
	s := sched(t, "lall", nil, 1e9)
	if _, err := s.AddNode(NodeSpec{ID: ""}, t0); err == nil {
		t.Fatal("node without id")
	}
	if _, err := s.AddNode(NodeSpec{ID: "x"}, t0); err == nil {
		t.Fatal("node without capacity")
	}
	for _, r := range []Request{{Title: "", Bitrate: 1}, {Title: "x", Bitrate: 0}, {Title: "x", Bitrate: -5}} {
		if _, err := s.Place(&r, t0); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	if _, err := s.Reserve("zz", "x", 1); !errors.Is(err, ErrUnknownNode) {
		t.Fatal(err)
	}
	if err := s.Heartbeat("zz", Report{}, t0); !errors.Is(err, ErrUnknownNode) {
		t.Fatal(err)
	}
	if err := s.SetWeight("a", -1); err == nil {
		t.Fatal("negative weight")
	}
	s.Release(Reservation{Node: 99}) // ignored, no panic
}

// Switching the policy at run time keeps every reservation and replica.
func TestSetPolicyEveryWay(t *testing.T) {
	s := sched(t, "lall", nil, 1e9, 1e9)
	var held []Reservation
	for i, p := range Policies() {
		if err := s.SetPolicy(p); err != nil {
			t.Fatal(err)
		}
		_, res := place(t, s, fmt.Sprint("t", i%3), fmt.Sprint("c", i), 1e6)
		held = append(held, res)
	}
	var total int64
	for _, n := range s.Nodes {
		total += n.ReservedBps
	}
	if total != int64(len(held))*1e6 {
		t.Fatalf("reserved %d after %d placements", total, len(held))
	}
	for _, r := range held {
		s.Release(r)
	}
	for _, n := range s.Nodes {
		if n.ReservedBps != 0 || n.Sessions != 0 || n.InUseBytes != 0 {
			t.Fatalf("leftover on %s: %+v", n.ID, n)
		}
	}
}

// Pinned titles are not room for a fill: a node whose disk is full of
// titles pinned there gets no session that needs a fill (every policy);
// unpinned, the same titles are room again (evictable when idle).
func TestPinnedTitlesAreNotRoom(t *testing.T) {
	for _, p := range Policies() {
		s, err := New(func() Config { c := DefaultConfig(); c.Policy = p; return c }())
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			if _, err := s.AddNode(NodeSpec{ID: id, Capacity: Capacity{EgressBps: 1e9, DiskBytes: 10e9}}, t0); err != nil {
				t.Fatal(err)
			}
		}
		full := Report{Titles: []Holding{{Title: "p1", Bytes: 5e9, Pinned: true}, {Title: "p2", Bytes: 5e9, Pinned: true}}}
		if err := s.Heartbeat("a", full, t0); err != nil {
			t.Fatal(err)
		}
		if got := s.Node("a").InUseBytes; got != 10e9 {
			t.Fatalf("%s: pinned bytes in use %d, want 10e9", p, got)
		}
		for i := range 20 {
			r := Request{Title: fmt.Sprint("new", i), Client: fmt.Sprint("c", i), Bitrate: 4e6, Bytes: 2e9}
			res, err := s.Place(&r, t0)
			if errors.Is(err, ErrNoCapacity) && (p == "dh" || p == "sh") {
				continue // IPVS's dh and sh do not fall back to another node
			}
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if res.NodeID == "a" {
				t.Fatalf("%s: a fill placed on the node full of pinned titles", p)
			}
			s.Release(res)
			s.DropReplica(res.NodeID, r.Title) // the viewer gave up before the fill began
		}
		full.Titles[1].Pinned = false
		if err := s.Heartbeat("a", full, t0); err != nil {
			t.Fatal(err)
		}
		if got := s.Node("a").InUseBytes; got != 5e9 {
			t.Fatalf("%s: after unpinning p2, in use %d, want 5e9", p, got)
		}
	}
}

// A request marked NoFill (the origin is unavailable) goes only to a node
// holding or filling its title, under every policy; none holds it: no
// capacity. HoldersInServiceFor counts the holders a request could use.
func TestNoFillOnlyOnHolders(t *testing.T) {
	for _, p := range Policies() {
		s := newTestScheduler(t, p, 1e9, 1e9, 1e9)
		s.SetReplica("b", "film", false, 1)
		s.SetReplica("c", "film", true, 1)
		if err := s.SetWeight("c", 0); err != nil {
			t.Fatal(err)
		}
		if got := s.HoldersInServiceFor(&Request{Title: "film"}); got != 1 {
			t.Fatalf("%s: holders in service %d, want 1 (c drains)", p, got)
		}
		for i := range 10 {
			r := Request{Title: "film", Client: fmt.Sprint("c", i), Bitrate: 4e6, NoFill: true}
			res, err := s.Place(&r, t0)
			if errors.Is(err, ErrNoCapacity) && (p == "dh" || p == "sh") {
				continue // IPVS's dh and sh do not fall back to another node
			}
			if err != nil || res.NodeID != "b" || res.Fill {
				t.Fatalf("%s: NoFill request placed %+v, %v; want b, no fill", p, res, err)
			}
		}
		r := Request{Title: "other", Bitrate: 4e6, NoFill: true}
		if res, err := s.Place(&r, t0); !errors.Is(err, ErrNoCapacity) {
			t.Fatalf("%s: NoFill request for a title nobody holds placed %+v, %v", p, res, err)
		}
	}
}
