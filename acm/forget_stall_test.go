package acm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
	pb "vodcluster/proto/vodcluster/v1"
)

// pauseAtDelete is a real Redis store whose server is stopped (SIGSTOP)
// at the first session delete once armed: a Redis that stalls between an
// operator's read and the writes that follow it.
type pauseAtDelete struct {
	*store.Redis
	srv   *redistest.Server
	t     *testing.T
	armed atomic.Bool
	once  sync.Once
}

func (p *pauseAtDelete) DeleteSessionHeldBy(ctx context.Context, id, unchanged string, managers ...string) (bool, error) {
	if p.armed.Load() {
		p.once.Do(func() { p.srv.Pause(p.t) })
	}
	return p.Redis.DeleteSessionHeldBy(ctx, id, unchanged, managers...)
}

// TestForgetNodeRedisStalledAfterItsRead: vodctl node forget of a dead
// node holding a session and a stored drain, its Redis stalling (the
// process stopped) after the forget read the stored state, at the
// session's delete. The delete waited for the store up to 10 s (the
// bound of a session's write off the front door), so vodctl ended in its
// own DeadlineExceeded (10 s) with no word of what was left undone. The
// whole call is now within the operator's 5 s: UNAVAILABLE saying that
// the store did not answer within it, the stored setting left (forget
// again removes it) and the session's entry deleted when the store
// answers; and so it is once Redis runs again.
func TestForgetNodeRedisStalledAfterItsRead(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	p := &pauseAtDelete{Redis: r, srv: srv, t: t}
	e := newManager(t, "", func(m *Manager) {
		onShared(p, nil, time.Minute)(m)
		m.LeaderTTL = time.Minute // the active manager throughout the stall
		m.HealthCheck = 100 * time.Millisecond
	})
	if !e.m.Leader() {
		t.Fatal("the manager does not hold the planner lock")
	}
	ctx := context.Background()
	n1 := e.startNode("n1", nodeOpts{})
	sid := e.admitOne("t1")
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	n1.leave()
	waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
	if _, err := r.Session(ctx, sid); err != nil {
		t.Fatalf("the session's entry before the forget: %v", err)
	}

	p.armed.Store(true)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second) // vodctl's default --timeout
	defer cancel()
	start := time.Now()
	_, err = e.admin.ForgetNode(cctx, &pb.ForgetNodeRequest{NodeId: "n1"})
	took := time.Since(start)
	msg := status.Convert(err).Message()
	// "the store", not "the store (Redis)": the wrapper hides its kind.
	if status.Code(err) != codes.Unavailable || !strings.Contains(msg, "the store did not answer within 5s: try again") {
		t.Fatalf("forget, Redis stalled after its read (took %v): %v; want UNAVAILABLE 'the store did not answer within 5s: try again'", took.Round(time.Millisecond), err)
	}
	if !pb.IsNotSaved(err) {
		t.Errorf("forget, Redis stalled after its read: the answer carries no %s detail (forgotten in this manager)", pb.ReasonNotSaved)
	}
	if took > adminStoreWait+2*time.Second {
		t.Errorf("forget, Redis stalled: answered after %v; want within adminStoreWait (5s)", took.Round(time.Millisecond))
	}
	for _, want := range []string{"node n1 forgotten in this manager", "its operator setting", "vodctl node forget n1 again",
		"1 session entry is deleted from the store when it answers again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("forget, Redis stalled: %q; want it to say %q", msg, want)
		}
	}
	// n1 had no prefetch order: their read failed too, and the answer
	// said they were left in the store.
	if strings.Contains(msg, "its prefetch orders") && !strings.Contains(msg, "its prefetch orders if any") {
		t.Errorf("forget, Redis stalled: %q names n1's prefetch orders as left, but it has none, and they were not read", msg)
	}
	if e.listed("n1") {
		t.Error("n1 still listed after a forget made in this manager")
	}

	srv.Resume()
	waitFor(t, 10*time.Second, "the session's entry deleted once Redis answers", func() bool {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		defer rcancel()
		_, err := r.Session(rctx, sid)
		return errors.Is(err, store.ErrNotFound)
	})
	if settings, raw := storedSettings(t, r); len(settings) != 1 {
		t.Fatalf("stored settings %s after the forget refused its write; want n1's drain left, as the answer said", raw)
	}
	var again *pb.ForgetNodeResponse
	waitFor(t, 10*time.Second, "the forget made again", func() bool {
		again, err = e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
		return err == nil
	})
	if !again.GetSettingRemoved() {
		t.Fatalf("forget again: %+v; want the setting removed", again)
	}
	if settings, raw := storedSettings(t, r); len(settings) != 0 {
		t.Fatalf("stored settings %s after the forget made again", raw)
	}
}
