package acm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// storedPolicyOf returns the scheduling policy stored in st, "" when none.
func storedPolicyOf(t *testing.T, st store.Store) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := st.State(ctx, statePolicy)
	if err != nil {
		return ""
	}
	var p storedPolicy
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("stored policy %s: %v", b, err)
	}
	return p.Policy
}

// unsavedInStall stalls the manager's Redis (SIGSTOP) and makes, on the
// manager still holding its planner lock, a policy and a drain of n1
// that the store does not take (CHANGE_NOT_SAVED), then waits for the
// lock lost; Redis stays stalled for the caller to resume.
func unsavedInStall(t *testing.T, e *env, pause func(testing.TB), policy string, drain bool) {
	t.Helper()
	ctx := context.Background()
	pause(t)
	if _, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: policy}); !pb.IsNotSaved(err) {
		t.Fatalf("policy %s, Redis stalled: %v; want it in use but not saved", policy, err)
	} else if msg := err.Error(); !strings.Contains(msg, "retake it with no other manager holding it meanwhile, it keeps the change and saves it then") {
		t.Errorf("policy not saved: %q; want it to say what the manager's own retake does", msg)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(drain)}); !pb.IsNotSaved(err) {
		t.Fatalf("drain %v of n1, Redis stalled: %v; want it in force but not saved", drain, err)
	}
	waitFor(t, 10*time.Second, "the planner lock lost in the stall", func() bool { return !e.m.Leader() })
	if got := e.m.sched.Policy().Name(); got != policy {
		t.Fatalf("policy in use in the stall: %s, want %s", got, policy)
	}
}

// A policy and a node setting put in force on the active manager but not
// saved (Redis stalled: vodctl exits 3) disappeared when the same
// manager, the stall outlasting its lease, lost and retook its planner
// lock: the retake counted as a takeover and applied the stored ones,
// though no other manager had held the lock. Retaken with no other
// holder in between (store.Locker.TakeLock's kept), the manager now keeps
// them and saves them; after another manager held the lock, the stored
// ones win as before.
func TestUnsavedChangesKeptAtTheManagersOwnRetake(t *testing.T) {
	open, srv := sharedRedis(t)
	st := &lockGatedRedis{Redis: open()}
	e := newManager(t, "", func(m *Manager) {
		onShared(st, nil, time.Minute)(m)
		m.LeaderTTL = 2 * time.Second // held through the first moments of a stall, lost in ~1.3 s
		m.HealthCheck = 100 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{}) // it serves a node: it retakes the lock without deferring
	if !e.m.Leader() {
		t.Fatal("the manager alone on the store does not hold the planner lock")
	}
	ctx := context.Background()
	if _, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"}); err != nil {
		t.Fatalf("policy rr, Redis answering: %v", err)
	}
	rd := open()

	// The same manager retakes the lock: what it had in force stays and
	// is saved.
	unsavedInStall(t, e, srv.Pause, "wlc", true)
	srv.Resume()
	waitFor(t, 15*time.Second, "the lock retaken and the takeover done", e.m.Leader)
	if got := e.m.sched.Policy().Name(); got != "wlc" {
		t.Errorf("policy after the manager's own retake: %s, want wlc (set by the operator, not saved), not the stored rr", got)
	}
	if !e.nodeInfo("n1").Draining {
		t.Error("n1 undrained after the manager's own retake: the operator's drain, not saved, was dropped")
	}
	if got := storedPolicyOf(t, rd); got != "wlc" {
		t.Errorf("stored policy after the retake: %q, want wlc saved then", got)
	}
	if settings, raw := storedSettings(t, rd); !settings["n1"].Draining {
		t.Errorf("stored node settings after the retake: %s, want n1's drain saved then", raw)
	}

	// Another manager holds the lock in between: the stored state wins.
	// Its attempts at the lock wait from before the stall: none is left
	// in Redis's socket to take it back at the resume.
	st.try.shut()
	unsavedInStall(t, e, srv.Pause, "lall", false)
	srv.Resume()
	other := newLeader(open(), testLeaderTTL, testLogger(t))
	waitFor(t, 10*time.Second, "another manager to take the lock", func() bool {
		_, err := other.step(ctx)
		return err == nil && other.holds()
	})
	other.release()
	st.try.open()
	waitFor(t, 15*time.Second, "the lock retaken after the other manager's", e.m.Leader)
	if got := e.m.sched.Policy().Name(); got != "wlc" {
		t.Errorf("policy after a retake that followed another manager's hold: %s, want the stored wlc", got)
	}
	if !e.nodeInfo("n1").Draining {
		t.Error("n1 undrained after a retake that followed another manager's hold: want its stored drain")
	}
	if got := storedPolicyOf(t, rd); got != "wlc" {
		t.Errorf("stored policy: %q, want wlc still (the change not saved dropped)", got)
	}
}
