package acm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// testLeaderTTL keeps failovers short in tests.
const testLeaderTTL = 300 * time.Millisecond

// countPlanner counts the plans it is asked for.
type countPlanner struct {
	mu    sync.Mutex
	plans int
}

func (p *countPlanner) Observe(string, time.Time) {}

func (p *countPlanner) Plan(time.Time, *smm.ClusterView) []smm.Action {
	p.mu.Lock()
	p.plans++
	p.mu.Unlock()
	return nil
}

func (p *countPlanner) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.plans
}

// sharedRedis starts a redis-server and returns a function opening one
// more client of it under one prefix: each manager's store.
func sharedRedis(t *testing.T) (open func() *store.Redis, srv *redistest.Server) {
	srv = redistest.Start(t)
	prefix := fmt.Sprintf("%s:", t.Name())
	return func() *store.Redis {
		r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}, srv
}

// onShared configures a manager on the shared store st with planner p.
func onShared(st store.Store, p smm.Planner, grace time.Duration) func(*Manager) {
	return func(m *Manager) {
		m.Store, m.Planner, m.LeaderTTL = st, p, testLeaderTTL
		m.PlanInterval, m.RestoreGrace = 20*time.Millisecond, grace
	}
}

// activeAndStandby starts two managers on the shared store open opens
// (a restore grace of a minute), titles their catalog: a, started first,
// holds the planner lock and b is the standby. extra, when not nil,
// configures both further.
func activeAndStandby(t *testing.T, open func() *store.Redis, titles []*pb.Title, extra func(*Manager)) (a, b *env) {
	t.Helper()
	conf := func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		if extra != nil {
			extra(m)
		}
	}
	a, b = newManagerWith(t, "", titles, conf), newManagerWith(t, "", titles, conf)
	if !a.m.Leader() || b.m.Leader() {
		t.Fatalf("leaders: a %v, b %v; want a alone", a.m.Leader(), b.m.Leader())
	}
	return a, b
}

// registerWith registers node id with e's manager, its first load report
// already naming sessions (a node that kept playing them).
func (e *env) registerWith(id string, sessions ...string) *fakeNode {
	e.t.Helper()
	n := e.registerOnly(id, sessions...)
	n.heartbeat()
	e.t.Cleanup(n.stop)
	waitFor(e.t, 5*time.Second, "the node's first report", func() bool { return e.reports(id) > 0 })
	return n
}

// registerOnly registers node id with e's manager (10 titles' worth of
// egress) and returns it without a heartbeat stream; its reports will
// name sessions.
func (e *env) registerOnly(id string, sessions ...string) *fakeNode {
	e.t.Helper()
	n := &fakeNode{t: e.t, id: id, nc: e.nc, cmds: make(chan *pb.NodeCommand, 64), diskFree: 1 << 40, sessions: sessions}
	if _, err := e.nc.Register(context.Background(), regReq(id, "127.0.0.1:7001", "127.0.0.1:7080", 10*titleBps)); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func inStore(t *testing.T, st store.Store, id string) bool {
	t.Helper()
	_, err := st.Session(context.Background(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestFailoverToStandby: two managers share one Redis. A holds the
// planner lock and plans; B stands by without planning and without
// touching A's sessions however long it waits. A session admitted on A's
// front door is playing when A closes; B takes the lock, the node
// registers with B, and the session is in B's table with its reservation
// rebuilt; B plans and admits.
func TestFailoverToStandby(t *testing.T) {
	open, _ := sharedRedis(t)
	stA, stB := open(), open()
	pA, pB := &countPlanner{}, &countPlanner{}
	// The node registers with B within grace of B's takeover (the
	// sessions B loaded end then): room for a loaded machine between the
	// takeover and the registration.
	const grace = 500 * time.Millisecond
	a := newManager(t, "", onShared(stA, pA, grace))
	if !a.m.Leader() {
		t.Fatal("the first manager on a free lock is not the leader")
	}
	n := a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1") // before B starts: in the store B's Start loads
	bStart := time.Now()
	b := newManager(t, "", onShared(stB, pB, grace))
	if b.m.Leader() {
		t.Fatal("the second manager took a held lock")
	}
	// The standby refuses a policy: stored, it would replace the active
	// manager's at the next takeover.
	if _, err := b.admin.SetPolicy(context.Background(), &pb.SetPolicyRequest{Policy: "rr"}); grpcCode(err) != codes.FailedPrecondition {
		t.Fatalf("SetPolicy on the standby: %v, want FAILED_PRECONDITION", err)
	}
	sid3 := a.admitOne("t3") // while B stands by
	n.setSessions(sid, sid3)
	for _, id := range []string{sid, sid3} {
		if err := n.event(id, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	// A plans; B's planner idles, and B leaves A's session alone past
	// twice its RestoreGrace.
	waitFor(t, 5*time.Second, "A to plan three times", func() bool { return pA.count() >= 3 })
	waitFor(t, 5*time.Second, "B to run past its restore grace", func() bool { return time.Since(bStart) > 2*grace })
	if got := pB.count(); got != 0 {
		t.Fatalf("the standby planned %d times", got)
	}
	if !inStore(t, stB, sid) || !inStore(t, stB, sid3) || len(b.sessions()) != 0 {
		t.Fatalf("standby touched the active manager's sessions: stored %v %v, B's table %v",
			inStore(t, stB, sid), inStore(t, stB, sid3), b.sessions())
	}

	// A goes; the node loses its stream and comes back through the VIP to B.
	n.stop()
	a.m.Close()
	waitFor(t, 20*testLeaderTTL, "B to take the planner lock", b.m.Leader)
	took := time.Now() // B's restore grace began before
	// The subscriber logged in on A's front door: known on B's too.
	waitFor(t, 5*time.Second, "B to load the known logins", func() bool { return b.m.logins.isKnown("127.0.0.1", "demo", b.m.now()) })
	b.registerWith("n1", sid, sid3)
	for id, title := range map[string]string{sid: "t1", sid3: "t3"} {
		s := b.session(id)
		if s == nil || s.State != store.StatePlaying || s.NodeId != "n1" || s.TitleId != title {
			t.Fatalf("session %s on B after the failover: %+v", id, s)
		}
	}
	if got := b.reserved("n1"); got != 2*titleBps {
		t.Fatalf("reserved on n1 after the failover: %d, want %d", got, 2*titleBps)
	}
	waitFor(t, 5*time.Second, "B to plan", func() bool { return pB.count() > 0 })
	// B's restore grace counts from the takeover, and the session has its
	// reservation: it stays.
	waitFor(t, 5*time.Second, "B to run past its restore grace after the takeover", func() bool { return time.Since(took) > 2*grace })
	if b.session(sid) == nil || !inStore(t, stB, sid) || b.session(sid3) == nil || !inStore(t, stB, sid3) {
		t.Fatal("the sessions did not survive the failover")
	}
	sid2 := b.admitOne("t2")
	if got := b.reserved("n1"); got != 3*titleBps || !inStore(t, stB, sid2) {
		t.Fatalf("after a new admission on B: reserved %d, stored %v", got, inStore(t, stB, sid2))
	}
}

// keepLock is a Redis store whose Unlock does nothing: its manager's
// Close leaves the lock behind, as a crash would.
type keepLock struct{ *store.Redis }

func (keepLock) Unlock(context.Context, string, string) (bool, error) { return false, nil }

// TestFailoverAfterCrash: a leader that dies without releasing the lock is
// replaced when its lease runs out; the new leader loads its sessions,
// and ends RestoreGrace after the takeover those whose node never comes
// back (removing them from the store).
func TestFailoverAfterCrash(t *testing.T) {
	open, _ := sharedRedis(t)
	stA, stB := keepLock{open()}, open()
	pA, pB := &countPlanner{}, &countPlanner{}
	a := newManager(t, "", onShared(stA, pA, time.Minute))
	// Short: the session ends within the test's wait, while B leads (a
	// manager no node reports to keeps the lock while no other manager
	// serves nodes), for B to delete it from the store.
	const grace = 300 * time.Millisecond
	b := newManager(t, "", onShared(stB, pB, grace))
	a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	a.m.Close()
	if b.m.Leader() {
		t.Fatal("B took the lock before the crashed leader's lease ran out")
	}
	waitFor(t, 20*testLeaderTTL, "B to take the expired lock", b.m.Leader)
	// B counts itself the leader once it has loaded A's sessions: the
	// session is in B's table, listed orphaned (no reservation, its node
	// not registered with B), unless a slow poll here let its grace run
	// out already and B ended it (and deleted it, which only a manager
	// that loaded it does).
	if s := b.session(sid); (s == nil && inStore(t, stB, sid)) || (s != nil && s.State != listedOrphaned) {
		t.Fatalf("A's session not loaded at the takeover: %+v", s)
	}
	waitFor(t, 10*time.Second, "the session of a node that never came back to end", func() bool {
		return b.session(sid) == nil && !inStore(t, stB, sid)
	})
}

// TestStandbyLoadsSessionsAtRegistration: a node that registers with the
// standby while the leader is alive (the VIP moved, the lock did not)
// brings its sessions' reservations along; the standby still does not
// plan. When it takes over, a session stored for that node since is
// reserved at once; with the store down, nodes cannot register.
func TestStandbyLoadsSessionsAtRegistration(t *testing.T) {
	open, srv := sharedRedis(t)
	pA, pB := &countPlanner{}, &countPlanner{}
	stB := open()
	a := newManager(t, "", onShared(open(), pA, time.Minute))
	b := newManager(t, "", onShared(stB, pB, time.Minute))
	n := a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	a.keepServing() // else the lock would go to b, which n1 reports to
	n.stop()
	b.registerWith("n1", sid)
	if s := b.session(sid); s == nil || b.reserved("n1") != titleBps {
		t.Fatalf("session on the standby after the node registered: %+v, reserved %d", s, b.reserved("n1"))
	}
	waitFor(t, 5*time.Second, "A to plan", func() bool { return pA.count() > 0 })
	if pB.count() != 0 || b.m.Leader() {
		t.Fatalf("the standby plans (%d) or leads (%v)", pB.count(), b.m.Leader())
	}

	// A session A wrote for n1 after n1 left it is loaded when B takes
	// over, with its reservation at once: n1 is registered with B.
	late := store.Session{ID: "late-1", User: "demo", Title: "t2", Node: "n1", ClientAddr: "127.0.0.1",
		BitrateBps: titleBps, State: store.StateAdmitted, Protocol: store.ProtoRTSP, AdmittedAt: time.Now()}
	if err := stB.PutSession(context.Background(), late); err != nil {
		t.Fatal(err)
	}
	a.m.Close()
	waitFor(t, 20*testLeaderTTL, "B to take over", b.m.Leader)
	if b.session(late.ID) == nil || b.reserved("n1") != 2*titleBps {
		t.Fatalf("after the takeover: session %+v, reserved %d", b.session(late.ID), b.reserved("n1"))
	}

	// With the store down, a node cannot register (it
	// would join without its sessions' reservations): UNAVAILABLE.
	srv.Stop()
	_, err := b.nc.Register(context.Background(), regReq("n2", "127.0.0.1:1", "", titleBps))
	if grpcCode(err) != codes.Unavailable {
		t.Fatalf("register with the store down: %v", err)
	}
}

// TestLeaderStepsDown: a leader whose lock is taken from it (its lease
// ran out while it could not renew, and another manager took it) stops
// planning at its next renewal and takes the lock again once free; a
// leader that cannot reach the store steps down.
func TestLeaderStepsDown(t *testing.T) {
	open, srv := sharedRedis(t)
	p := &countPlanner{}
	e := newManager(t, "", onShared(open(), p, time.Minute))
	if !e.m.Leader() {
		t.Fatal("not the leader")
	}
	waitFor(t, 5*time.Second, "planning", func() bool { return p.count() > 0 })
	ctx := context.Background()
	raw := srv.Client(t)
	key := t.Name() + ":lock:" + plannerLock
	if err := raw.Set(ctx, key, "intruder", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*testLeaderTTL, "the leader to step down", func() bool { return !e.m.Leader() })
	before := p.count()
	e.m.plan(time.Now())
	if got := p.count(); got != before {
		t.Fatalf("a manager without the lock planned (%d -> %d)", before, got)
	}
	if err := raw.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*testLeaderTTL, "the lock to be taken again", e.m.Leader)
	waitFor(t, 5*time.Second, "planning again", func() bool { return p.count() > before })

	// A leader that cannot reach the store stops counting itself the
	// leader before its lease could have run out.
	srv.Stop()
	waitFor(t, 20*testLeaderTTL, "the leader to step down with the store gone", func() bool { return !e.m.Leader() })
}

// TestLeaderStartErrors: Start fails, all or nothing, on a lease too short
// to renew and on a shared store that does not answer.
func TestLeaderStartErrors(t *testing.T) {
	open, srv := sharedRedis(t)
	users, err := boss.NewFile(DefaultRealm, testUsers())
	if err != nil {
		t.Fatal(err)
	}
	st := open()
	for name, ttl := range map[string]time.Duration{"1ms lease": time.Millisecond, "store down": time.Second} {
		if name == "store down" {
			srv.Stop()
		}
		m := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
			Store: st, LeaderTTL: ttl, Secret: testSecret, BOSS: users, Logger: testLogger(t)}
		if err := m.Start(); err == nil {
			m.Close()
			t.Fatalf("%s: started", name)
		}
	}
}

// TestOrphanTakenOverStaysInStore: the node of a session admitted on A
// (the leader) moves to B (the front door's address moved) while A keeps
// running, and serving a node (n3: a manager no node reports to gives
// the lock to the one serving nodes). A sees the node die and, after its
// RestoreGrace, ends the orphan in its own table, but leaves the store
// entry B took over; a session whose node went nowhere is deleted.
func TestOrphanTakenOverStaysInStore(t *testing.T) {
	open, _ := sharedRedis(t)
	stA, stB := open(), open()
	const grace = 200 * time.Millisecond
	a := newManager(t, "", onShared(stA, &countPlanner{}, grace))
	b := newManager(t, "", onShared(stB, &countPlanner{}, time.Minute))
	n1 := a.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	n2 := a.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002"})
	var onN1, onN2 []string
	for _, t1 := range []string{"t1", "t2", "t3"} {
		sid := a.admitOne(t1)
		switch a.session(sid).NodeId {
		case "n1":
			onN1 = append(onN1, sid)
		case "n2":
			onN2 = append(onN2, sid)
		}
	}
	if len(onN1) == 0 || len(onN2) == 0 {
		t.Fatalf("sessions not on both nodes: %v", a.sessions())
	}
	a.startNode("n3", nodeOpts{rtsp: "127.0.0.1:7003"}) // A keeps a node
	n1.stop()
	n2.stop()
	b.registerWith("n1", onN1...)
	if got := b.reserved("n1"); got != int64(len(onN1))*titleBps {
		t.Fatalf("B reserves %d for n1's %d sessions", got, len(onN1))
	}
	waitFor(t, 10*time.Second, "A to end the orphans", func() bool { return len(a.sessions()) == 0 })
	if !a.m.Leader() {
		t.Fatal("A, serving n3, gave the lock up")
	}
	waitFor(t, 5*time.Second, "the entries of n2's sessions to go", func() bool {
		for _, sid := range onN2 {
			if inStore(t, stB, sid) {
				return false
			}
		}
		return true
	})
	for _, sid := range onN1 {
		got, err := stB.Session(context.Background(), sid)
		if err != nil {
			t.Fatalf("B's session %s gone from the store: %v", sid, err)
		}
		if got.Manager != b.m.holderID() || b.session(sid) == nil {
			t.Fatalf("stored manager %q, want B's %q; in B's table: %v", got.Manager, b.m.holderID(), b.session(sid) != nil)
		}
	}
}

// lossyLocker is the shared Redis store with two renewals failing as a
// network fault makes them fail: the first reaches Redis (the lease is
// extended) and its answer is lost, the second never gets there.
type lossyLocker struct {
	store.Locker
	renewals int
}

func (l *lossyLocker) RenewLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	l.renewals++
	switch l.renewals {
	case 1:
		l.Locker.RenewLock(ctx, name, holder, ttl)
		return false, context.DeadlineExceeded
	case 2:
		return false, context.DeadlineExceeded
	}
	return l.Locker.RenewLock(ctx, name, holder, ttl)
}

// After a renewal whose answer was lost and one that failed, the manager
// takes the lock again and its lease is counted from then: the key must
// outlast that lease, so that a standby does not take the lock while the
// manager still believes it holds it. The steps follow the lease's own
// timing (ttl/3 apart, as run does).
func TestPlannerLockAfterLostRenewal(t *testing.T) {
	open, _ := sharedRedis(t)
	const ttl = 900 * time.Millisecond
	a := newLeader(&lossyLocker{Locker: open()}, ttl, testLogger(t))
	b := newLeader(open(), ttl, testLogger(t))
	ctx := context.Background()
	a.step(ctx) // t=0: taken
	time.Sleep(ttl / 3)
	a.step(ctx) // renewal applied, its answer lost
	time.Sleep(ttl / 3)
	a.step(ctx) // renewal lost: the lease runs short
	time.Sleep(ttl / 3)
	a.step(ctx)                             // takes its own key again: lease until ~5/3 ttl
	time.Sleep(ttl/3 + 50*time.Millisecond) // past where the key would have expired unextended
	if _, err := b.step(ctx); err != nil {
		t.Fatal(err)
	}
	if a.holds() && b.holds() {
		t.Fatal("both managers hold the planner lock")
	}
}

// A manager that is not the planner-lock holder but had loaded another
// manager's sessions (it took the lock over after a store outage and gave
// it back, its nodes reporting to the other) lets them go at the end of
// RestoreGrace without deleting their store entries or telling the nodes
// to end them: they are the active manager's.
func TestStandbyLeavesLoadedSessionsToTheLeader(t *testing.T) {
	open, _ := sharedRedis(t)
	stB := open()
	a := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	b := newManager(t, "", onShared(stB, &countPlanner{}, 300*time.Millisecond))
	a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	waitFor(t, 5*time.Second, "A to lead", a.m.Leader)
	if b.m.Leader() {
		t.Fatal("B leads")
	}
	if n, err := b.m.loadSessions(context.Background(), ""); err != nil || n != 1 {
		t.Fatalf("B loading the stored sessions as at a takeover: %d %v", n, err)
	}
	waitFor(t, 10*time.Second, "B to let the session go", func() bool { return b.session(sid) == nil })
	if !inStore(t, stB, sid) {
		t.Fatal("B deleted the active manager's session from the store")
	}
	if a.session(sid) == nil {
		t.Fatal("the session is gone from the active manager")
	}
}

// TestStoreDownNoLeaderAnswer: while the shared store does not answer, no
// manager can hold the planner lock: the changes only the active manager
// makes are refused as UNAVAILABLE, saying so, on either manager, not as
// a standby's FAILED_PRECONDITION naming another manager as the active one.
func TestStoreDownNoLeaderAnswer(t *testing.T) {
	open, srv := sharedRedis(t)
	a := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	b := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	if !a.m.Leader() || b.m.Leader() {
		t.Fatal("want a active and b standby")
	}
	ctx := context.Background()
	if _, err := b.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"}); grpcCode(err) != codes.FailedPrecondition {
		t.Fatalf("SetPolicy on the standby: %v, want FAILED_PRECONDITION", err)
	}
	srv.Stop()
	for _, e := range []*env{a, b} {
		waitFor(t, 10*time.Second, "the store seen down and the lock lost", func() bool {
			return e.m.health.storeDown.Load() && !e.m.Leader()
		})
	}
	for name, e := range map[string]*env{"active": a, "standby": b} {
		calls := map[string]error{}
		_, calls["SetPolicy"] = e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"})
		_, calls["EndSessions"] = e.admin.EndSessions(ctx, &pb.EndSessionsRequest{User: "demo"})
		_, calls["ForgetNode"] = e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
		_, calls["SuspendSubscriber"] = e.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 60})
		_, calls["Prefetch"] = e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
		_, calls["Evict"] = e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
		for call, err := range calls {
			if grpcCode(err) != codes.Unavailable || !strings.Contains(err.Error(), "the store does not answer") {
				t.Errorf("%s on the %s manager with the store down: %v, want UNAVAILABLE naming the store", call, name, err)
			}
		}
	}
}
