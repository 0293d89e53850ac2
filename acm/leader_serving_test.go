package acm

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// stallableLock is a Redis store whose lock calls fail, while stalled, as
// calls to an unreachable Redis do; its other calls go through.
type stallableLock struct {
	*store.Redis
	stalled atomic.Bool
}

func (s *stallableLock) TakeLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, bool, error) {
	if s.stalled.Load() {
		return false, false, context.DeadlineExceeded
	}
	return s.Redis.TakeLock(ctx, name, holder, ttl)
}

func (s *stallableLock) TryLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	held, _, err := s.TakeLock(ctx, name, holder, ttl)
	return held, err
}

func (s *stallableLock) RenewLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if s.stalled.Load() {
		return false, context.DeadlineExceeded
	}
	return s.Redis.RenewLock(ctx, name, holder, ttl)
}

func (s *stallableLock) LockHolder(ctx context.Context, name string) (string, error) {
	if s.stalled.Load() {
		return "", context.DeadlineExceeded
	}
	return s.Redis.LockHolder(ctx, name)
}

// TestPlannerLockGoesToTheManagerServingNodes: the active manager A,
// its node and a playing session on it, loses the planner lock while it
// cannot reach Redis; manager B starts just as the lease has run out and
// takes the free lock at its start, though no node reports to it (the
// nodes, and the virtual IP, stay on A). B kept it: nothing planned, the
// operator's commands on A were refused as on a standby, and B ended the
// session it had loaded as "node did not come back" at its restore grace,
// writing a second record of it. Now B gives the lock to A, which plans;
// B leaves the session to A, with no record of it.
func TestPlannerLockGoesToTheManagerServingNodes(t *testing.T) {
	open, _ := sharedRedis(t)
	stA := &stallableLock{Redis: open()}
	stB := open()
	pA, pB := &countPlanner{}, &countPlanner{}
	// Shorter than B's give-back (four renewals, a third of a lease
	// apart): B leaves the session it loaded to A all the same.
	const grace = 200 * time.Millisecond
	a := newManager(t, "", onShared(stA, pA, grace))
	n := a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	n.setSessions(sid)
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	stA.stalled.Store(true)
	waitFor(t, 20*testLeaderTTL, "A to step down", func() bool { return !a.m.Leader() })
	waitFor(t, 20*testLeaderTTL, "A's lease to run out in Redis", func() bool {
		h, err := stB.LockHolder(context.Background(), plannerLock)
		return err == nil && h == ""
	})
	recordsB := filepath.Join(t.TempDir(), "records-b.jsonl")
	b := newManager(t, "", func(m *Manager) {
		onShared(stB, pB, grace)(m)
		m.SessionRecordsFile = recordsB
	})
	if !b.m.Leader() {
		t.Fatal("B did not take the free lock at its start")
	}
	stA.stalled.Store(false)
	waitFor(t, 40*testLeaderTTL, "A, which the node reports to, to get the planner lock", a.m.Leader)
	if b.m.Leader() {
		t.Fatal("both managers lead")
	}
	plans := pA.count()
	waitFor(t, 5*time.Second, "A to plan", func() bool { return pA.count() > plans })
	if _, err := a.admin.SetPolicy(context.Background(), &pb.SetPolicyRequest{Policy: "rr"}); err != nil {
		t.Fatalf("an operator's command on the manager serving the node: %v", err)
	}
	waitFor(t, 5*grace, "B to leave the session it loaded at its start", func() bool { return b.session(sid) == nil })
	if s := a.session(sid); s == nil || s.State != store.StatePlaying {
		t.Fatalf("the session on A: %+v", s)
	}
	if !inStore(t, stB, sid) {
		t.Fatal("the playing session left the store")
	}
	if recs := readRecords(t, recordsB); len(recs) != 0 {
		t.Fatalf("B wrote records of A's session: %+v", recs)
	}
}

// A standby B that takes the planner lock while the active manager A
// cannot reach Redis claims A's sessions in the store (their entries name
// B). When A, which the node reports to, gets the lock back, it claims
// them back: before, their entries kept naming B, so that A, ending the
// session, left its entry in the store (a manager deletes only the
// entries it holds), listed as playing, to be loaded by the next
// takeover.
func TestSessionsClaimedBackWhenTheLockFollowsTheNodes(t *testing.T) {
	open, _ := sharedRedis(t)
	stA := &stallableLock{Redis: open()}
	stB := open()
	const grace = time.Minute
	a := newManager(t, "", onShared(stA, nil, grace))
	n := a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	n.setSessions(sid)
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	b := newManager(t, "", onShared(stB, nil, grace))
	if b.m.Leader() {
		t.Fatal("B took a held lock")
	}
	stA.stalled.Store(true)
	waitFor(t, 40*testLeaderTTL, "B to take the lock A cannot renew", b.m.Leader)
	waitFor(t, 5*time.Second, "B's claim of A's session", func() bool {
		s, err := stB.Session(context.Background(), sid)
		return err == nil && s.Manager == b.m.holderID()
	})
	stA.stalled.Store(false)
	waitFor(t, 40*testLeaderTTL, "A, which the node reports to, to get the lock back", a.m.Leader)
	waitFor(t, 5*time.Second, "A's claim back", func() bool {
		s, err := stB.Session(context.Background(), sid)
		return err == nil && s.Manager == a.m.holderID()
	})
	n.setSessions()
	if err := n.event(sid, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the ended session's entry deleted", func() bool { return !inStore(t, stB, sid) })
}

// A manager no node reports to lets a free planner lock be for
// deferSteps tries before it takes it (after a store stall, the manager
// the nodes are on takes the lock back first); one that serves nodes
// takes it at its first try.
func TestLeaderWithoutNodesDefers(t *testing.T) {
	open, _ := sharedRedis(t)
	ctx := context.Background()
	idle := newLeader(open(), time.Minute, testLogger(t))
	idle.serves = func() bool { return false }
	for i := range deferSteps {
		if gained, err := idle.step(ctx); gained || err != nil {
			t.Fatalf("try %d of a manager without nodes: gained %v, %v", i, gained, err)
		}
	}
	busy := newLeader(open(), time.Minute, testLogger(t))
	busy.serves = func() bool { return true }
	if gained, err := busy.step(ctx); !gained || err != nil {
		t.Fatalf("a manager with nodes on a free lock: gained %v, %v", gained, err)
	}
	if gained, _ := idle.step(ctx); gained {
		t.Fatal("the lock taken from its holder")
	}
	busy.release()
	// The failed try above started a new round of deferSteps.
	for i := range deferSteps {
		if gained, _ := idle.step(ctx); gained {
			t.Fatalf("try %d after a failed one: the free lock taken at once", i)
		}
	}
	if gained, err := idle.step(ctx); !gained || err != nil {
		t.Fatalf("after deferSteps tries, a manager without nodes takes a free lock: %v, %v", gained, err)
	}
}

// A planner-lock holder no node reports to gives the lock back, after
// giveBackSteps renewals, once another manager serves nodes (after Redis
// returned from an outage, a manager started just then took the free
// lock at its start while the nodes registered with the other, and kept
// it: nothing planned, and the operator's commands on the manager the
// nodes are on were refused as on a standby). While no manager serves
// nodes it keeps it, however it took it: a lone manager started before
// its nodes, and a pair whose nodes are all dead (each gave the lock back
// to the other in turn, every two leases).
func TestLeaderWithoutNodesGivesTheLockBack(t *testing.T) {
	open, _ := sharedRedis(t)
	ctx := context.Background()
	holder := newLeader(open(), time.Minute, testLogger(t))
	if gained, err := holder.step(ctx); !gained || err != nil {
		t.Fatalf("take: %v %v", gained, err)
	}
	holder.serves = func() bool { return false }
	for i := range 3 * deferSteps {
		if holder.step(ctx); !holder.holds() {
			t.Fatalf("given back at renewal %d with no manager serving nodes", i)
		}
	}
	other := newLeader(open(), time.Minute, testLogger(t))
	var otherServes atomic.Bool
	otherServes.Store(true)
	other.serves = otherServes.Load
	if gained, _ := other.step(ctx); gained {
		t.Fatal("the lock taken from its holder")
	}
	if holder.step(ctx); holder.holds() {
		t.Fatal("a holder serving no node kept the lock past giveBackSteps renewals while another manager serves nodes")
	}
	if gained, err := other.step(ctx); !gained || err != nil {
		t.Fatalf("the manager with nodes after the give-back: %v %v", gained, err)
	}
	// Every node dies: the lock stays where it is.
	otherServes.Store(false)
	for i := range 3 * deferSteps {
		if holder.step(ctx); holder.holds() {
			t.Fatalf("step %d: the lock taken back by a manager serving no node", i)
		}
		if other.step(ctx); !other.holds() {
			t.Fatalf("step %d: the lock given back with no manager serving nodes", i)
		}
	}
	// A holder's own lease of serving does not count as another's.
	otherServes.Store(true)
	holder.serves = func() bool { return true }
	holder.step(ctx) // refused the lock; its serving lease not taken (other's)
	other.step(ctx)  // serving again: holds the lock, extends nothing of holder's
	otherServes.Store(false)
	for i := range 3 * deferSteps {
		if other.step(ctx); !other.holds() && i < giveBackSteps {
			t.Fatalf("given back at renewal %d, before giveBackSteps", i)
		}
		holder.step(ctx)
	}
	if !holder.holds() {
		t.Fatal("the manager serving nodes did not get the lock from one serving none")
	}
	// At Close a manager gives its serving lease up.
	h, err := holder.locker.LockHolder(ctx, servingLock)
	if err != nil || h != holder.holder {
		t.Fatalf("serving lease held by %q (%v), want the manager with nodes", h, err)
	}
	holder.markServing(ctx, false)
	if h, _ := holder.locker.LockHolder(ctx, servingLock); h != "" {
		t.Fatalf("serving lease still held by %q after it was given up", h)
	}
}

// keepServing registers with e's manager a node that takes no session
// (egress below any title's bitrate, no disk free) and keeps reporting,
// so that a test's active manager keeps the planner lock while its other
// nodes move to the standby: a holder no node reports to gives the lock
// to a manager that serves nodes (leader.step).
func (e *env) keepServing() *fakeNode {
	e.t.Helper()
	n := &fakeNode{t: e.t, id: "keep", nc: e.nc, cmds: make(chan *pb.NodeCommand, 64)}
	if _, err := e.nc.Register(context.Background(), regReq("keep", "127.0.0.1:7099", "127.0.0.1:7098", 1000)); err != nil {
		e.t.Fatal(err)
	}
	n.heartbeat()
	e.t.Cleanup(n.stop)
	waitFor(e.t, 5*time.Second, "the kept node's first report", func() bool { return e.reports("keep") > 0 })
	return n
}
