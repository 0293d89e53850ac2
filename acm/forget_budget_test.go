package acm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// deadlineRedis is a real Redis store that, once armed, passes the
// deadline of the next read of the node settings (a forget's first
// read: its whole budget) on deadlines.
type deadlineRedis struct {
	*store.Redis
	armed     atomic.Bool
	deadlines chan time.Time
}

func (d *deadlineRedis) State(ctx context.Context, name string) ([]byte, error) {
	if name == stateNodeSettings && d.armed.CompareAndSwap(true, false) {
		dl, _ := ctx.Deadline()
		d.deadlines <- dl
	}
	return d.Redis.State(ctx, name)
}

// A forget that spent its 5 s waiting for locks (here a plan in progress,
// planMu, held past the forget's deadline) left its session deletes no
// time: they failed at once, and the manager took Redis, which answered
// throughout, as stalled (/healthz 503, "store unavailable" logged) until
// its next read. The forget's own budget running out is no stall now: the
// deletes wait for the health check, which reads Redis at once, finds it
// answering and makes them.
func TestForgetOutOfTimeDoesNotMarkTheStoreStalled(t *testing.T) {
	open, _ := sharedRedis(t)
	st := &deadlineRedis{Redis: open(), deadlines: make(chan time.Time, 1)}
	var log lockedLog
	e := newManager(t, "", func(m *Manager) {
		onShared(st, nil, time.Minute)(m)
		m.LeaderTTL = time.Minute       // the active manager throughout
		m.HealthCheck = 5 * time.Minute // no periodic read: only those asked for
		m.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if !e.m.Leader() {
		t.Fatal("the manager does not hold the planner lock")
	}
	ctx := context.Background()
	n1 := e.startNode("n1", nodeOpts{})
	sid := e.admitOne("t1")
	n1.leave()
	waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
	rd := open()
	if _, err := rd.Session(ctx, sid); err != nil {
		t.Fatalf("the session's entry before the forget: %v", err)
	}

	e.m.planMu.Lock() // a plan in progress
	st.armed.Store(true)
	answered := make(chan error, 1)
	go func() {
		_, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
		answered <- err
	}()
	dl := <-st.deadlines
	<-time.After(time.Until(dl) + 10*time.Millisecond) // the forget's budget used up by its wait
	e.m.planMu.Unlock()
	err := <-answered
	if !pb.IsNotSaved(err) {
		t.Fatalf("forget out of time after its locks: %v; want forgotten here, its store work left", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "1 session entry is deleted from the store when it answers again") {
		t.Errorf("forget out of time: %q; want it to count the session's delete left", msg)
	}
	waitFor(t, 10*time.Second, "the session's entry deleted", func() bool {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := rd.Session(rctx, sid)
		return errors.Is(err, store.ErrNotFound)
	})
	if strings.Contains(log.String(), "store unavailable") || e.m.health.storeDown.Load() {
		t.Errorf("Redis, answering throughout, taken as unavailable after a forget ran out of its own time:\n%s", log.String())
	}
}
