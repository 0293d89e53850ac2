package smm

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// A Replicator restored from a snapshot plans as the one that took it: the
// learnt session lengths, the remembered peak and the last plan's counts
// are in the snapshot (they were not: restored in the morning after an
// evening peak, the hot title's 6 replicas became 2, the dropped copies
// lost the evictors' protection and were fetched again at the next peak).
// The snapshot goes through JSON, as the manager's store keeps it.
func TestRestoredReplicatorPlansAsBefore(t *testing.T) {
	c := newCluster(8, 3)
	for i := range c.view.Nodes {
		c.view.Nodes[i].EgressBps = 2e8
	}
	r := newRep(t, ReplicatorConfig{})
	now := time.Date(2026, 1, 1, 21, 0, 0, 0, time.UTC)
	// Evening: t00 asked for 10,000 times in the last hour; its viewers
	// watch 20% of it (400 s of 2000 s), learnt from 200 session ends.
	for i := range 10000 {
		at := now.Add(-time.Hour + time.Duration(i)*360*time.Millisecond)
		r.Observe("t00", at)
		if i%50 == 0 {
			r.SessionEnded("t00", 400, 2000, at)
		}
	}
	r.Observe("t01", now)
	r.Plan(now, &c.view)
	later := now.Add(10 * time.Hour)
	r.Plan(later, &c.view)
	nodes, kept := r.PlannedNodes("t00")

	b, err := json.Marshal(r.SnapshotPopularity(later))
	if err != nil {
		t.Fatal(err)
	}
	var snap PopularityState
	if err := json.Unmarshal(b, &snap); err != nil {
		t.Fatal(err)
	}
	r2 := newRep(t, ReplicatorConfig{})
	if err := r2.RestorePopularity(snap); err != nil {
		t.Fatal(err)
	}
	if got, want := r2.pop.MeanSession("t00", 2000, later), r.pop.MeanSession("t00", 2000, later); math.Abs(got-want) > 1e-6*want {
		t.Errorf("mean session after the restore %.1f s, before %.1f s", got, want)
	}
	if n2, k2 := r2.PlannedNodes("t00"); k2 != kept || len(n2) != len(nodes) {
		t.Errorf("restored plan: t00 on %v (%d replicas), was %v (%d)", n2, k2, nodes, kept)
	}
	r2.Plan(later, &c.view)
	if _, k2 := r2.PlannedNodes("t00"); k2 != kept {
		t.Errorf("the first plan after the restore gives t00 %d replicas, %d without the restart", k2, kept)
	}
	if kept < 3 {
		t.Fatalf("the test needs a title kept on several nodes: %d", kept)
	}
}

// A snapshot of an earlier version (trackers only) still loads; a
// malformed plan, session statistics or peak is refused whole.
func TestRestorePopularityChecksThePlan(t *testing.T) {
	old := `{"at":"2026-01-01T00:00:00Z","demand":[{"title":"a","count":3,"weight":2.5}],"rank":[]}`
	var s PopularityState
	if err := json.Unmarshal([]byte(old), &s); err != nil {
		t.Fatal(err)
	}
	r := newRep(t, ReplicatorConfig{})
	if err := r.RestorePopularity(s); err != nil || r.Popularity().Len() != 1 {
		t.Fatalf("earlier snapshot: %v, %d titles", err, r.Popularity().Len())
	}
	for name, mut := range map[string]func(*PopularityState){
		"no replica": func(s *PopularityState) { s.Plan = []PlannedTitle{{Title: "a", Replicas: 0}} },
		"more nodes": func(s *PopularityState) {
			s.Plan = []PlannedTitle{{Title: "a", Replicas: 1, Nodes: []string{"n1", "n2"}}}
		},
		"a node twice": func(s *PopularityState) {
			s.Plan = []PlannedTitle{{Title: "a", Replicas: 2, Nodes: []string{"n1", "n1"}}}
		},
		"an empty node": func(s *PopularityState) { s.Plan = []PlannedTitle{{Title: "a", Replicas: 1, Nodes: []string{""}}} },
		"a title twice": func(s *PopularityState) {
			s.Plan = []PlannedTitle{{Title: "a", Replicas: 1}, {Title: "a", Replicas: 1}}
		},
		"no title":          func(s *PopularityState) { s.Plan = []PlannedTitle{{Replicas: 1}} },
		"NaN peak":          func(s *PopularityState) { s.PeakBps = math.NaN() },
		"fractions above 1": func(s *PopularityState) { s.Sessions = &SessionStats{FracSum: 3, FracN: 2} },
		"negative watch":    func(s *PopularityState) { s.Demand = []PopularityEntry{{Title: "b", Weight: 1, WatchN: -1}} },
	} {
		bad := s
		mut(&bad)
		r := newRep(t, ReplicatorConfig{})
		if err := r.RestorePopularity(bad); err == nil || r.Popularity().Len() != 0 || len(r.plan) != 0 {
			t.Errorf("%s: accepted or half loaded (%v)", name, err)
		}
	}
}

// A snapshot whose plan is empty (its manager planned nothing) empties the
// plan of the Replicator restoring it, as it would one plan; an earlier
// version's snapshot (no session statistics, no plan) leaves it.
func TestRestoreAnEmptyPlan(t *testing.T) {
	c := newCluster(2, 3)
	r := newRep(t, ReplicatorConfig{})
	now := time.Date(2026, 1, 1, 21, 0, 0, 0, time.UTC)
	for range 50 {
		r.Observe("t00", now)
	}
	r.Plan(now, &c.view)
	if _, k := r.PlannedNodes("t00"); k == 0 {
		t.Fatal("t00 not planned")
	}
	old := PopularityState{At: now}
	if err := r.RestorePopularity(old); err != nil {
		t.Fatal(err)
	}
	if _, k := r.PlannedNodes("t00"); k == 0 {
		t.Fatal("an earlier version's snapshot emptied the plan")
	}
	empty := newRep(t, ReplicatorConfig{}).SnapshotPopularity(now)
	b, _ := json.Marshal(empty)
	var back PopularityState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := r.RestorePopularity(back); err != nil {
		t.Fatal(err)
	}
	if _, k := r.PlannedNodes("t00"); k != 0 {
		t.Fatalf("a snapshot with an empty plan left t00's %d replicas", k)
	}
}
