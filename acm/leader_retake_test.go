package acm

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// callGate holds the calls that pass it while shut, until it is opened or
// their context ends; entered counts the calls it held.
type callGate struct {
	mu      sync.Mutex
	ch      chan struct{} // nil: open
	entered atomic.Int32
}

func (g *callGate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

func (g *callGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

func (g *callGate) pass(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	g.entered.Add(1)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lockGatedRedis is the shared Redis store whose attempts at the planner
// lock (TakeLock) and reads of the sessions (Sessions, as a takeover
// loads them) wait while their gate is shut: a Redis slow to answer them.
type lockGatedRedis struct {
	*store.Redis
	try, sessions callGate
}

func (g *lockGatedRedis) TakeLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, bool, error) {
	if err := g.try.pass(ctx); err != nil {
		return false, false, err
	}
	return g.Redis.TakeLock(ctx, name, holder, ttl)
}

func (g *lockGatedRedis) Sessions(ctx context.Context) ([]store.Session, []store.Skipped, error) {
	if err := g.sessions.pass(ctx); err != nil {
		return nil, nil, err
	}
	return g.Redis.Sessions(ctx)
}

// clusterChanges makes the changes only the active manager makes, on e's
// manager, and returns their answers by call.
func clusterChanges(e *env) map[string]error {
	ctx := context.Background()
	calls := map[string]error{}
	_, calls["Pin"] = e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1"})
	_, calls["Prefetch"] = e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	_, calls["Evict"] = e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	_, calls["SetPolicy"] = e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"})
	return calls
}

// A manager alone on a shared Redis that lost the planner lock in the
// store's outage answers the changes only the active manager makes, once
// the store answers again and until it holds the lock, UNAVAILABLE saying
// it is taking the lock back, then that it loads the sessions (the
// takeover at the lock's return), never with a standby's
// FAILED_PRECONDITION naming another manager as the active one (there is
// none); it did, for the moments between the store's return and its
// takeover's end. A manager that finds another holding the lock is the
// standby, and says so.
func TestRetakingManagerIsNotCalledTheStandby(t *testing.T) {
	open, srv := sharedRedis(t)
	st := &lockGatedRedis{Redis: open()}
	e := newManager(t, "", func(m *Manager) {
		onShared(st, &countPlanner{}, time.Minute)(m)
		m.HealthCheck, m.StoreTimeout = 100*time.Millisecond, 300*time.Millisecond
	})
	e.startNode("n1", nodeOpts{}) // it serves a node: it takes the lock back without deferring
	if !e.m.Leader() {
		t.Fatal("the manager alone on the store does not hold the planner lock")
	}
	if _, err := e.admin.SetPolicy(context.Background(), &pb.SetPolicyRequest{Policy: "rr"}); err != nil {
		t.Fatalf("SetPolicy on the active manager: %v", err)
	}

	// The outage: the lock is lost; its attempts wait after the store's
	// return (the window a lease's third leaves).
	st.try.shut()
	srv.Pause(t)
	waitFor(t, 10*time.Second, "the store seen down and the lock lost", func() bool {
		return e.m.health.storeDown.Load() && !e.m.Leader()
	})
	srv.Resume()
	waitFor(t, 10*time.Second, "the store seen answering again", func() bool { return !e.m.health.storeDown.Load() })
	if e.m.Leader() {
		t.Fatal("the manager holds the lock, its attempts held")
	}
	for call, err := range clusterChanges(e) {
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "this manager is taking (back) the planner lock") ||
			!strings.Contains(err.Error(), "try again in a few seconds") || strings.Contains(err.Error(), "standby") {
			t.Errorf("%s while the manager takes the lock back: %v, want UNAVAILABLE saying so, not a standby's answer", call, err)
		}
	}

	// The lock taken back: the takeover loads the sessions.
	st.sessions.shut()
	st.try.open()
	waitFor(t, 10*time.Second, "the takeover reading the sessions", func() bool { return st.sessions.entered.Load() > 0 })
	if e.m.Leader() {
		t.Fatal("the manager counts itself the leader before its takeover loaded the sessions")
	}
	for call, err := range clusterChanges(e) {
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "is loading the sessions in the store") ||
			!strings.Contains(err.Error(), "try again in a few seconds") || strings.Contains(err.Error(), "standby") {
			t.Errorf("%s while the takeover loads the sessions: %v, want UNAVAILABLE saying so, not a standby's answer", call, err)
		}
	}
	st.sessions.open()
	waitFor(t, 10*time.Second, "the manager active again", e.m.Leader)
	if _, err := e.admin.SetPolicy(context.Background(), &pb.SetPolicyRequest{Policy: "rr"}); err != nil {
		t.Fatalf("SetPolicy once active again: %v", err)
	}

	// Another manager takes the lock in the next outage: this one is
	// the standby then.
	st.try.shut()
	srv.Pause(t)
	waitFor(t, 10*time.Second, "the store seen down and the lock lost", func() bool {
		return e.m.health.storeDown.Load() && !e.m.Leader()
	})
	srv.Resume()
	other := newLeader(open(), testLeaderTTL, testLogger(t))
	waitFor(t, 10*time.Second, "another manager to take the lock", func() bool {
		_, err := other.step(context.Background())
		return err == nil && other.holds()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); other.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	st.try.open()
	waitFor(t, 10*time.Second, "the store's refusal of the lock seen", func() bool {
		return e.m.lead.other.Load() && !e.m.health.storeDown.Load()
	})
	for call, err := range clusterChanges(e) {
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "this manager is the standby") {
			t.Errorf("%s with another manager holding the lock: %v, want the standby's FAILED_PRECONDITION", call, err)
		}
	}
}
