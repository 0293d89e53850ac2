package smm

import (
	"testing"
	"time"
)

// TestForgetNode: a forgotten node's prefetches (the operator's in
// flight, a planned one in flight, one waiting for its retry) and its
// eviction holds go, another node's stay; the in-flight ones count as
// failed; a node registering later under the id is planned on at once,
// without backoff or hold.
func TestForgetNode(t *testing.T) {
	r := newRep(t, ReplicatorConfig{RetryBase: time.Hour, RetryMax: 2 * time.Hour})
	now := offPeak
	r.Prefetched("n0", "t00", 1<<30, now) // the operator's, in flight
	r.Prefetched("n0", "t01", 1<<30, now)
	r.FillFailed("n0", "t01", now) // waits for its retry
	r.Prefetched("n1", "t02", 1<<30, now)
	r.Evicted("n0", "t03", now)
	r.Evicted("n1", "t03", now)
	if f := r.Fills(); len(f) != 3 {
		t.Fatalf("fills before: %+v", f)
	}
	failed := r.Stats().FillsFailed

	fills, holds := r.ForgetNode("n0", now)
	if fills != 2 || holds != 1 {
		t.Fatalf("ForgetNode dropped %d prefetches and %d holds, want 2 and 1", fills, holds)
	}
	if f := r.Fills(); len(f) != 1 || f[0].Node != "n1" || f[0].Title != "t02" {
		t.Fatalf("fills after: %+v, want n1's only", f)
	}
	if h := r.Holds(now); len(h) != 1 || h[0].Node != "n1" {
		t.Fatalf("holds after: %+v, want n1's only", h)
	}
	if st := r.Stats(); st.FillsFailed != failed+1 || st.FillsDone != 0 {
		t.Fatalf("stats %+v: want the one in flight failed (%d before), none done", st, failed)
	}
	if r.Held("n0", "t03", now) {
		t.Fatal("the hold on the forgotten node still holds")
	}
	if fills, holds := r.ForgetNode("n0", now); fills != 0 || holds != 0 {
		t.Fatalf("forgotten twice: %d %d", fills, holds)
	}

	// A new n0: the plan orders its titles there at once (no backoff of
	// the old n0's failure, no hold).
	c := newCluster(1, 2)
	seed(t, r, "t01", 1, now)
	seed(t, r, "t03", 1, now)
	c.view.Titles["t03"] = TitleInfo{ID: "t03", Bytes: 1 << 30, Bitrate: 4e6, Duration: 2000}
	acts := r.Plan(now.Add(time.Second), &c.view)
	got := map[string]bool{}
	for _, a := range acts {
		if a.Kind == Prefetch && a.Node == "n0" {
			got[a.Title] = true
		}
	}
	if !got["t01"] || !got["t03"] {
		t.Fatalf("plan on the new n0: %v, want t01 and t03 prefetched", acts)
	}
}

// Storage.ForgetNode drops the node's Evictor: the id gets a new one.
func TestStorageForgetNode(t *testing.T) {
	s, err := NewStorage("", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ev := s.Evictor("n0")
	if s.Evictor("n0") != ev {
		t.Fatal("Evictor not kept per node")
	}
	s.Replicator.Evicted("n0", "t00", offPeak)
	s.ForgetNode("n0", offPeak)
	if s.Evictor("n0") == ev {
		t.Fatal("the forgotten node's Evictor is handed out again")
	}
	if len(s.Replicator.Holds(offPeak)) != 0 {
		t.Fatal("the Replicator's hold on the forgotten node stays")
	}
}

// A forgotten node leaves the last plan's nodes at once, not at the next
// Plan: a snapshot taken between them (a manager restarting after a crash
// waits for the nodes of its restored plan) no longer names it; the
// replica counts stay. During a plan job the change is replayed on the
// job's plan.
func TestForgetNodeLeavesThePlan(t *testing.T) {
	for _, during := range []bool{false, true} {
		r := newRep(t, ReplicatorConfig{})
		now := offPeak
		c := newCluster(2, 2)
		seed(t, r, "t00", 1, now)
		r.Plan(now, &c.view)
		if nodes := r.PlanNodes(); len(nodes) == 0 {
			t.Fatalf("plan nodes %v: want t00 planned", nodes)
		}
		node := r.PlanNodes()[0]
		replicas := r.plan["t00"].replicas
		if during {
			j := r.StartPlan(now.Add(time.Second))
			j.Run(&c.view)
			r.ForgetNode(node, now)
			r.FinishPlan(j)
		} else {
			r.ForgetNode(node, now)
		}
		for _, n := range r.PlanNodes() {
			if n == node {
				t.Fatalf("during a plan job %v: plan nodes %v still name the forgotten %s", during, r.PlanNodes(), node)
			}
		}
		if p := r.plan["t00"]; p == nil || p.replicas != replicas {
			t.Fatalf("during a plan job %v: t00's plan %+v, want %d replicas kept", during, p, replicas)
		}
		for _, n := range snapshotNodes(r.SnapshotPopularity(now)) {
			if n == node {
				t.Fatalf("during a plan job %v: the snapshot's plan names the forgotten %s", during, node)
			}
		}
	}
}

// snapshotNodes returns the nodes of the plan in s.
func snapshotNodes(s PopularityState) []string {
	var out []string
	for _, p := range s.Plan {
		out = append(out, p.Nodes...)
	}
	return out
}
