package acm

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// A Redis that restarts without its data (run without appendonly, as the
// deployment guide advises against) holds none of the active manager's
// sessions. The manager kept them in its table alone: a standby taking
// over later did not know them, rebuilt no reservation for them, and
// ended them at the node as unknown. Now the manager, taking the lock
// again (its key is gone with the rest), writes its live sessions again,
// and the standby taking over after it rebuilds their reservations.
func TestLiveSessionsWrittenAgainAfterTheStoreLostThem(t *testing.T) {
	ctx := context.Background()
	open, srv := sharedRedis(t)
	st := open()
	stA := &failingPuts{Redis: open()}
	a := newManager(t, "", onShared(stA, nil, time.Minute))
	n := a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	n.setSessions(sid)
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the session playing in the store", func() bool {
		s, err := st.Session(ctx, sid)
		return err == nil && s.State == "playing"
	})
	// The first write back fails (Redis just restarted): its retry, when
	// the store answers again, writes it all the same (a write made late
	// writes only over an entry this manager holds, and there is none).
	stA.fail.Store(1)
	if err := srv.Client(t).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*testLeaderTTL, "the live session written again", func() bool { return inStore(t, st, sid) })
	if stA.fail.Load() != 0 {
		t.Fatal("the session written back without the write that fails")
	}
	if s, err := st.Session(ctx, sid); err != nil || s.Manager != a.m.holderID() || s.Node != "n1" {
		t.Fatalf("the session written again: %+v, %v; want A's on n1", s, err)
	}
	waitFor(t, 20*testLeaderTTL, "A to lead again", a.m.Leader)

	b := newManager(t, "", onShared(open(), nil, time.Minute))
	n.stop()
	a.m.Close()
	waitFor(t, 20*testLeaderTTL, "B to take the planner lock", b.m.Leader)
	b.registerWith("n1", sid)
	if s := b.session(sid); s == nil || s.NodeId != "n1" {
		t.Fatalf("the session on B after the failover: %+v", s)
	}
	if got := b.reserved("n1"); got != titleBps {
		t.Fatalf("reserved on n1 after the failover: %d, want %d", got, titleBps)
	}
}

// failingPuts is a Redis store whose next fail session writes fail, as
// writes to a Redis restarting do.
type failingPuts struct {
	*store.Redis
	fail atomic.Int32
}

func (f *failingPuts) PutSession(ctx context.Context, s store.Session) error {
	if f.fail.Add(-1) >= 0 {
		return errors.New("redis: connection refused")
	}
	f.fail.Store(0)
	return f.Redis.PutSession(ctx, s)
}
