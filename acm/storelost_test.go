package acm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

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

// TestOperatorStateWrittenAgainAfterTheStoreLostIt: the node settings and
// suspensions the operator set are written again by the manager taking
// its planner lock again after a Redis that lost its data: a node drained
// for maintenance stays drained, a suspended subscriber stays out. (The
// store's empty state was applied: the node undrained without a word,
// its weight kept here but never saved, the subscriber let in.)
func TestOperatorStateWrittenAgainAfterTheStoreLostIt(t *testing.T) {
	ctx := context.Background()
	open, srv := sharedRedis(t)
	st := open()
	a := newManager(t, "", onShared(open(), nil, time.Minute))
	a.startNode("n1", nodeOpts{})
	a.startNode("n2", nodeOpts{})
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2", Weight: ptr[int32](30)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "kid", DurationS: 600}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client(t).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	stored := func() (map[string]nodeSetting, map[string]suspension) {
		var ns map[string]nodeSetting
		var su map[string]suspension
		if b, err := st.State(ctx, stateNodeSettings); err == nil {
			json.Unmarshal(b, &ns)
		}
		if b, err := st.State(ctx, stateSuspensions); err == nil {
			json.Unmarshal(b, &su)
		}
		return ns, su
	}
	waitFor(t, 20*testLeaderTTL, "the operator's state written again", func() bool {
		ns, su := stored()
		return len(ns) > 0 && len(su) > 0
	})
	ns, su := stored()
	if !ns["n1"].Draining || ns["n2"].Weight == nil || *ns["n2"].Weight != 30 {
		t.Errorf("node settings written again: %+v, want n1 draining, n2 at weight 30", ns)
	}
	if _, ok := su["kid"]; !ok {
		t.Errorf("suspensions written again: %+v, want kid's", su)
	}
	waitFor(t, 20*testLeaderTTL, "A to lead again", a.m.Leader)
	a.m.mu.Lock()
	draining := a.m.sched.Node("n1").Draining
	a.m.mu.Unlock()
	if !draining {
		t.Error("n1 undrained by the store's loss")
	}
	if res := a.describe("kid", "kid", "t1"); res.StatusCode != base.StatusForbidden {
		t.Errorf("the suspended subscriber after the store's loss: %d, want 403", res.StatusCode)
	}
}

// TestOperatorStateWrittenAgainAfterALongOutage: the manager lost its
// planner lock to the store's errors (an outage longer than its lease)
// before Redis came back without its data: it takes the lock back kept
// (the store lost its record of holders, none took it since), and writes
// back the drain and suspension it had saved, beside the drain the
// outage kept it from saving. (A restore that looked for an empty store
// was skipped by that unsaved drain, and one that needed the lock's key
// seen gone did not happen at all.)
func TestOperatorStateWrittenAgainAfterALongOutage(t *testing.T) {
	ctx := context.Background()
	open, srv := sharedRedis(t)
	st := &lockGatedRedis{Redis: open()}
	e := newManager(t, "", func(m *Manager) {
		onShared(st, nil, time.Minute)(m)
		m.LeaderTTL = 2 * time.Second
		m.HealthCheck = 100 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{})
	e.startNode("n2", nodeOpts{})
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "kid", DurationS: 600}); err != nil {
		t.Fatal(err)
	}
	st.try.shut()
	srv.Pause(t)
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2", Draining: ptr(true)}); !pb.IsNotSaved(err) {
		t.Fatalf("drain of n2, Redis stalled: %v; want it in force, not saved", err)
	}
	waitFor(t, 10*time.Second, "the planner lock lost in the outage", func() bool { return !e.m.Leader() })
	srv.Resume()
	if err := srv.Client(t).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	st.try.open()
	waitFor(t, 20*time.Second, "the lock taken back", e.m.Leader)
	rd := open()
	settings, raw := storedSettings(t, rd)
	if !settings["n1"].Draining || !settings["n2"].Draining {
		t.Errorf("stored node settings after the outage: %s, want n1's drain written again and n2's saved", raw)
	}
	if b, err := rd.State(ctx, stateSuspensions); err != nil || !strings.Contains(string(b), `"kid"`) {
		t.Errorf("stored suspensions after the outage: %s %v, want kid's written again", b, err)
	}
	if !e.nodeInfo("n1").Draining || !e.nodeInfo("n2").Draining {
		t.Error("a node undrained by the outage")
	}
}
