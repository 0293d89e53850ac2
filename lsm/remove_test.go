package lsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// checkViews fails t when the scheduler's derived views disagree with its
// nodes: every Index is the node's position, byID names the same nodes,
// holders list exactly the nodes whose replica view has the title, the
// filling count is the nodes' sum, and each node's count of prefetches
// that give their origin channel away is its replicas'.
func checkViews(t *testing.T, s *Scheduler) {
	t.Helper()
	filling := 0
	want := map[string]map[int32]bool{}
	for i, n := range s.Nodes {
		if n.Index != i || s.Node(n.ID) != n {
			t.Fatalf("node %s: Index %d at position %d, byID %p", n.ID, n.Index, i, s.Node(n.ID))
		}
		filling += n.filling
		yielding := 0
		for _, r := range n.titles {
			if r.yieldsChannel() {
				yielding++
			}
		}
		if yielding != n.yielding {
			t.Fatalf("node %s: yielding %d, its prefetches no viewer plays %d", n.ID, n.yielding, yielding)
		}
		for title := range n.titles {
			if want[title] == nil {
				want[title] = map[int32]bool{}
			}
			want[title][int32(i)] = true
		}
	}
	if len(s.byID) != len(s.Nodes) {
		t.Fatalf("byID has %d nodes, Nodes %d", len(s.byID), len(s.Nodes))
	}
	if filling != s.Filling() {
		t.Fatalf("filling %d, nodes' sum %d", s.Filling(), filling)
	}
	if len(s.holders) != len(want) {
		t.Fatalf("holders of %d titles, replica view %d", len(s.holders), len(want))
	}
	for title, h := range s.holders {
		if len(h) != len(want[title]) {
			t.Fatalf("holders of %s: %v, want %v", title, h, want[title])
		}
		for _, i := range h {
			if !want[title][i] {
				t.Fatalf("holders of %s: %v, want %v", title, h, want[title])
			}
		}
	}
}

// A dead node without reservations is removed under every policy: the
// nodes after it move down, their reservations made before still release
// exactly, the replica view and the policies' picks name only the nodes
// left, and the id registering again starts fresh (no operator weight, no
// drain, no titles).
func TestRemoveNode(t *testing.T) {
	for _, p := range Policies() {
		t.Run(p, func(t *testing.T) {
			s := newTestScheduler(t, p, 100e6, 100e6, 100e6, 100e6)
			for i, id := range []string{"a", "b", "c", "d"} {
				s.SetReplica(id, "shared", false, 1000)
				s.SetReplica(id, fmt.Sprint("own-", id), i%2 == 0, 1000)
			}
			if err := s.SetWeight("b", 300); err != nil {
				t.Fatal(err)
			}
			if err := s.SetDraining("b", true); err != nil {
				t.Fatal(err)
			}
			var kept []Reservation
			for _, id := range []string{"a", "c", "d"} {
				for k := 0; k < 3; k++ {
					res, err := s.Reserve(id, fmt.Sprint("t", k), 1e6)
					if err != nil {
						t.Fatal(err)
					}
					kept = append(kept, res)
				}
			}
			bRes, _ := s.Reserve("b", "shared", 1e6)

			if err := s.RemoveNode("zz"); !errors.Is(err, ErrUnknownNode) {
				t.Fatalf("unknown node: %v", err)
			}
			if err := s.RemoveNode("b"); err == nil || !strings.Contains(err.Error(), "alive") {
				t.Fatalf("alive node: %v", err)
			}
			s.MarkDead("b")
			if err := s.RemoveNode("b"); err == nil || !strings.Contains(err.Error(), "reservations") {
				t.Fatalf("node with a reservation: %v", err)
			}
			s.Release(bRes)
			v := s.Version()
			if err := s.RemoveNode("b"); err != nil {
				t.Fatal(err)
			}
			if s.Node("b") != nil || len(s.Nodes) != 3 || s.Version() == v {
				t.Fatalf("after removal: node %v, %d nodes, version %d (was %d)", s.Node("b"), len(s.Nodes), s.Version(), v)
			}
			checkViews(t, s)
			if _, ok := s.holders["own-b"]; ok {
				t.Fatal("the removed node's own title still has holders")
			}
			// Reservations made before the removal (c and d moved down)
			// release to their own node.
			for _, res := range kept {
				s.Release(res)
			}
			for _, n := range s.Nodes {
				if n.Sessions != 0 || n.ReservedBps != 0 {
					t.Fatalf("node %s after releasing everything: %d sessions, %d bit/s", n.ID, n.Sessions, n.ReservedBps)
				}
			}
			if an := s.Anomalies(); an != (Anomalies{}) {
				t.Fatalf("anomalies %+v", an)
			}
			// The policy picks among the nodes left, holders or not.
			for i := 0; i < 40; i++ {
				title := []string{"shared", "own-a", "own-c", "new", "own-b"}[i%5]
				r := Request{Title: title, Client: fmt.Sprint("c", i), Bitrate: 1e6}
				res, err := s.Place(&r, t0)
				if err != nil {
					t.Fatalf("place %s: %v", title, err)
				}
				if res.NodeID == "b" || s.Nodes[res.Node].ID != res.NodeID {
					t.Fatalf("placed on %s at %d", res.NodeID, res.Node)
				}
				checkViews(t, s)
			}
			// The id comes back as a new node.
			n, err := s.AddNode(NodeSpec{ID: "b", Capacity: Capacity{EgressBps: 50e6}}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if n.Index != 3 || n.Weight != DefaultWeight || n.Draining || n.Titles() != 0 || n.Sessions != 0 || !n.Alive {
				t.Fatalf("b registered again: %+v", n)
			}
			checkViews(t, s)
		})
	}
}

// Removing the only node, or the last one, leaves a scheduler that
// refuses with ErrNoNode and takes nodes again.
func TestRemoveLastNode(t *testing.T) {
	s := newTestScheduler(t, "lall", 10e6)
	s.SetReplica("a", "film", true, 100)
	s.MarkDead("a")
	if err := s.RemoveNode("a"); err != nil {
		t.Fatal(err)
	}
	checkViews(t, s)
	r := Request{Title: "film", Bitrate: 1e6}
	if _, err := s.Place(&r, t0); !errors.Is(err, ErrNoNode) {
		t.Fatalf("no node: %v", err)
	}
	if s.Filling() != 0 || s.LiveFilling() != 0 {
		t.Fatalf("fills of the removed node still counted: %d", s.Filling())
	}
	if _, err := s.AddNode(NodeSpec{ID: "a", Capacity: Capacity{EgressBps: 10e6}}, t0); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Place(&r, t0); err != nil || res.NodeID != "a" || res.Node != 0 || !res.Fill {
		t.Fatalf("after re-adding: %+v %v", res, err)
	}
}
