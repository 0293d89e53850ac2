package acm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestAdminWritesRedisStalled: the operator's changes on the active
// manager while its Redis does not answer (the process stopped). Each
// waited up to 10 s for the store, vodctl's own default --timeout, so
// vodctl ended in its own DeadlineExceeded instead of the manager's
// answer. Each now waits at most adminStoreWait (5 s) and answers
// UNAVAILABLE saying the store did not answer within it. The planner lock
// is held for a minute, so that the manager stays the active one
// throughout (no notLeader answer).
func TestAdminWritesRedisStalled(t *testing.T) {
	e, _, srv := leaderOnRedis(t)
	drain := true
	calls := []struct {
		name string
		call func(ctx context.Context) error
		// notSaved: the change is made in the manager, only its write
		// failed (pb.IsNotSaved); the others changed nothing.
		notSaved bool
	}{
		{"suspend", func(ctx context.Context) error {
			_, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "alice", DurationS: 60})
			return err
		}, false},
		{"node settings", func(ctx context.Context) error {
			_, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n-gone", Draining: &drain})
			return err
		}, false}, // its stored setting not read: nothing changed
		{"node shown", func(ctx context.Context) error {
			_, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n-gone"})
			return err
		}, false},
		{"forget", func(ctx context.Context) error {
			_, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n-gone"})
			return err
		}, false}, // its stored state not read: nothing changed
		{"pin", func(ctx context.Context) error {
			_, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: testTitles[0].GetId()})
			return err
		}, false},
		{"policy", func(ctx context.Context) error {
			_, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"})
			return err
		}, true},
	}
	srv.Pause(t)
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // vodctl's default --timeout
		start := time.Now()
		err := c.call(ctx)
		took := time.Since(start)
		cancel()
		msg := status.Convert(err).Message()
		if status.Code(err) != codes.Unavailable || !strings.Contains(msg, "the store (Redis) did not answer within 5s: try again") {
			t.Errorf("%s, Redis stalled, within vodctl's 10s (took %v): %v; want UNAVAILABLE 'the store (Redis) did not answer within 5s: try again'", c.name, took.Round(time.Millisecond), err)
		}
		if got := pb.IsNotSaved(err); got != c.notSaved {
			t.Errorf("%s, Redis stalled: the answer says in use but not saved (%s detail): %v, want %v", c.name, pb.ReasonNotSaved, got, c.notSaved)
		}
		// Nothing stored before: a restart goes back to the configured
		// policy, an earlier stored one otherwise; the answer says both.
		if want := "applies the policy stored before by vodctl policy, if any and still of the same configured policy, else the manager's configured one (" + e.m.configuredPolicy + " here)"; c.name == "policy" && !strings.Contains(msg, want) {
			t.Errorf("policy not saved: %q; want it to say %q", msg, want)
		}
	}
}

// TestStandbyListSuspensionsOpLockHeld: vodctl suspensions against the
// standby while the operator's settings (opMu) are held, as by a node's
// setting changed on the standby or a registration's reload, each
// waiting for a stalled store. The standby waited for the lock without a
// bound before its 5 s read, so vodctl ended in its own DeadlineExceeded
// after 10 s. The wait is now bounded by the same deadline: UNAVAILABLE
// saying the settings were held throughout it; with the lock free again,
// the list is read.
func TestStandbyListSuspensionsOpLockHeld(t *testing.T) {
	open, _ := sharedRedis(t)
	_, b := activeAndStandby(t, open, testTitles, nil)
	b.m.opMu.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // vodctl's default --timeout
	defer cancel()
	_, err := b.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{})
	b.m.opMu.Unlock()
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "held the operator's settings throughout 5s") {
		t.Fatalf("ListSuspensions on the standby, opMu held, within vodctl's 10s: %v; want UNAVAILABLE 'held the operator's settings throughout 5s'", err)
	}
	if _, err := b.admin.ListSuspensions(context.Background(), &pb.ListSuspensionsRequest{}); err != nil {
		t.Fatalf("ListSuspensions on the standby, opMu free again: %v", err)
	}
}

// TestLockCtx: lockCtx takes a free mutex at once; on a held one it
// returns the context's error when it ends, and leaves the mutex to its
// holder, free once the holder unlocks it (the goroutine it left behind
// takes and releases it).
func TestLockCtx(t *testing.T) {
	var mu sync.Mutex
	if err := lockCtx(context.Background(), &mu); err != nil {
		t.Fatalf("free mutex: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lockCtx(ctx, &mu) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("held mutex, context cancelled: %v; want context.Canceled", err)
	}
	mu.Unlock()
	if err := lockCtx(context.Background(), &mu); err != nil {
		t.Fatalf("mutex released by its holder: %v", err)
	}
	mu.Unlock()
}

// TestAdminChangesOpLockHeld: the operator's changes on the active
// manager while another change holds the operator's settings (opMu,
// pinsMu), as one waiting for a stalled store does. Each waited for the
// lock without a bound, then up to 5 s for the store: past vodctl's
// default --timeout (10 s), which ended in its own DeadlineExceeded. The
// wait for the lock is now within the same 5 s: UNAVAILABLE saying the
// settings were held throughout, and nothing changed.
func TestAdminChangesOpLockHeld(t *testing.T) {
	e, _, _ := leaderOnRedis(t)
	drain := true
	calls := map[string]func(ctx context.Context) error{
		"suspend": func(ctx context.Context) error {
			_, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "alice", DurationS: 60})
			return err
		},
		"node settings": func(ctx context.Context) error {
			_, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n-gone", Draining: &drain})
			return err
		},
		"forget": func(ctx context.Context) error {
			_, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n-gone"})
			return err
		},
		"pin": func(ctx context.Context) error {
			_, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: testTitles[0].GetId()})
			return err
		},
		"policy": func(ctx context.Context) error {
			_, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"})
			return err
		},
	}
	e.m.pinsMu.Lock()
	e.m.opMu.Lock()
	errs := make(map[string]error, len(calls))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // vodctl's default --timeout
			defer cancel()
			err := call(ctx)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	e.m.opMu.Unlock()
	e.m.pinsMu.Unlock()
	for name, err := range errs {
		if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "held the operator's settings throughout 5s") {
			t.Errorf("%s, the operator's settings held, within vodctl's 10s: %v; want UNAVAILABLE 'held the operator's settings throughout 5s'", name, err)
		}
		if pb.IsNotSaved(err) {
			t.Errorf("%s, refused before any change: the answer says in use but not saved (%s)", name, pb.ReasonNotSaved)
		}
	}
	ss, err := e.admin.ListSuspensions(context.Background(), &pb.ListSuspensionsRequest{})
	if err != nil || len(ss.GetSuspensions()) != 0 {
		t.Errorf("suspensions after the refused suspend: %v (%v); want none", ss.GetSuspensions(), err)
	}
	if p, err := e.admin.GetPolicy(context.Background(), &pb.GetPolicyRequest{}); err != nil || p.GetPolicy() == "rr" {
		t.Errorf("policy after the refused change: %v (%v); want the configured one", p.GetPolicy(), err)
	}
}

// TestAdminRefusedWriteNotAppliedLater: an operator's change refused
// while Redis stalled (UNAVAILABLE, "suspension not changed", "pin not
// pinned") must change nothing. Its write was left in the stalled
// Redis's socket, which applied it when it ran again: the subscriber
// suspended in the store (a standby's re-read, a takeover and a restart
// applied it) though the active manager, and the operator, had it not
// suspended; the pin likewise. A write whose caller gave up is now
// refused by Redis itself (store.Redis.PutState fences it by its
// context's deadline).
func TestAdminRefusedWriteNotAppliedLater(t *testing.T) {
	e, open, srv := leaderOnRedis(t)
	title := testTitles[0].GetId()
	srv.Pause(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // vodctl's default --timeout
	defer cancel()
	if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "alice", DurationS: 600}); status.Code(err) != codes.Unavailable {
		t.Fatalf("suspend, Redis stalled: %v; want UNAVAILABLE", err)
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	if _, err := e.admin.Pin(pctx, &pb.PlacementRequest{TitleId: title}); status.Code(err) != codes.Unavailable {
		t.Fatalf("pin, Redis stalled: %v; want UNAVAILABLE", err)
	}
	srv.Resume()
	rd := open()
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	// A write of the store's own after the resume: the stalled ones were
	// read by Redis before it (first in its socket buffers).
	if err := rd.PutState(rctx, "probe", []byte("x")); err != nil {
		t.Fatalf("Redis resumed: %v", err)
	}
	if b, err := rd.State(rctx, stateSuspensions); err == nil && strings.Contains(string(b), "alice") {
		t.Errorf("suspension refused (UNAVAILABLE) is in the store after Redis ran again: %s", b)
	}
	if b, err := rd.State(rctx, statePins); err == nil && strings.Contains(string(b), title) {
		t.Errorf("pin refused (UNAVAILABLE) is in the store after Redis ran again: %s", b)
	}
	if l, _ := e.admin.ListSuspensions(rctx, &pb.ListSuspensionsRequest{}); len(l.GetSuspensions()) != 0 {
		t.Errorf("the manager lists %v after a refused suspension", l.GetSuspensions())
	}
}

// leaderOnRedis starts a manager on a Redis of its own (started by the
// test; open opens another client of it) holding the planner lock for a minute, so that it stays the
// active one through a stall of Redis (no notLeader answer).
func leaderOnRedis(t *testing.T) (e *env, open func() *store.Redis, srv *redistest.Server) {
	t.Helper()
	open, srv = sharedRedis(t)
	e = newManagerWith(t, "", testTitles, func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		m.LeaderTTL = time.Minute
	})
	if !e.m.Leader() {
		t.Fatal("the manager does not hold the planner lock")
	}
	return e, open, srv
}
