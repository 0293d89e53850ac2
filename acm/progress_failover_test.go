package acm

import (
	"cmp"
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// onSharedWithProgress configures a manager on a store open opens (a
// pair's) that saves its sessions' progress every 20 ms, with restore
// grace grace and its session records in records ("": none).
func onSharedWithProgress(open func() *store.Redis, grace time.Duration, records string) func(*Manager) {
	return func(m *Manager) {
		onShared(open(), nil, grace)(m)
		m.ProgressSave = 20 * time.Millisecond
		m.SessionRecordsFile = records
	}
}

// TestSessionRecordOfANodeBackWithoutItAfterATakeover: a standby started
// while the active manager's session played, whose bytes grew since;
// the active manager and the session's node die, the standby takes over
// and the node comes back restarted, without the session: its record
// ends when the active manager last heard of it, with the bytes it last
// knew (the progress as read at the takeover, not at the standby's
// start).
func TestSessionRecordOfANodeBackWithoutItAfterATakeover(t *testing.T) {
	open, _ := sharedRedis(t)
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	a := newManager(t, "", onSharedWithProgress(open, time.Minute, ""))
	n, sid, _ := startPlaying(t, a, 1000)
	b := newManager(t, "", onSharedWithProgress(open, time.Minute, path))
	if b.m.Leader() {
		t.Fatal("the second manager took a held lock")
	}
	n.setSent(sid, 2000)
	heard := waitProgressOf(t, a, sid, 2000)
	n.stop()
	killManager(t, a)
	waitFor(t, 20*testLeaderTTL, "B to take over", b.m.Leader)
	b.startNode("n1", nodeOpts{}) // restarted: it plays nothing
	r := recordOf(t, path)
	if r.Session != sid || r.BytesSent != 2000 || !r.BytesSentAsOfReport || r.EndedAt.Before(heard) {
		t.Fatalf("record %+v: want it ended at %v or later, bytes_sent 2000 as of a report", r, heard.UTC())
	}
}

// TestSessionRecordAtTakeoverOfANodeKnownBefore: the node of a session
// that the active manager stored the progress of had registered with the
// standby long before (the VIP moved to it and back) and died there.
// Taking over, the standby ends the session, whose node does not come
// back, when the active manager last heard of it, not when the standby
// last heard of the node (before the session started: played_s 0).
func TestSessionRecordAtTakeoverOfANodeKnownBefore(t *testing.T) {
	open, _ := sharedRedis(t)
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	a := newManager(t, "", onSharedWithProgress(open, time.Minute, ""))
	b := newManager(t, "", onSharedWithProgress(open, 500*time.Millisecond, path))
	a.keepServing() // the lock stays with A while n1 registers with B
	b.registerWith("n1").stop()
	waitFor(t, 10*time.Second, "n1 dead on B", func() bool {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		return !b.m.sched.Node("n1").Alive
	})
	n, sid, _ := startPlaying(t, a, 1000)
	n.setSent(sid, 2000) // played on a while
	heard := waitProgressOf(t, a, sid, 2000)
	n.stop()
	killManager(t, a)
	waitFor(t, 20*testLeaderTTL, "B to take over", b.m.Leader)
	r := recordOf(t, path)
	if r.Session != sid || r.Reason != "node did not come back" || r.EndedAt.Before(heard) || r.BytesSent != 2000 {
		t.Fatalf("record %+v: want it ended at %v or later, bytes_sent 2000", r, heard.UTC())
	}
}

// TestSessionRecordAtTakeoverOfAnOrphanHeldBefore: the standby holds an
// orphan of the active manager's (its node registered with the standby,
// then died there, and went back to the active manager, which heard it
// play on) when it takes over: the session, whose node comes back
// without it, ends when the active manager last heard of it, with the
// bytes it last knew, not when the standby last heard of the node.
func TestSessionRecordAtTakeoverOfAnOrphanHeldBefore(t *testing.T) {
	open, _ := sharedRedis(t)
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	a := newManager(t, "", onSharedWithProgress(open, time.Minute, ""))
	b := newManager(t, "", onSharedWithProgress(open, time.Minute, path))
	a.keepServing() // the lock stays with A while n1 registers with B
	n := a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	onB := b.registerWith("n1", sid)
	onB.setSent(sid, 1000)
	waitFor(t, 10*time.Second, "the session on B with its bytes", func() bool {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		s := b.m.sessions[sid]
		return s != nil && s.bytesSent == 1000
	})
	onB.stop()
	waitFor(t, 10*time.Second, "the session orphaned on B", func() bool {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		s := b.m.sessions[sid]
		return s != nil && !s.reserved
	})
	back := a.registerWith("n1", sid)
	back.setSent(sid, 2000)
	heard := waitProgressOf(t, a, sid, 2000)
	back.stop()
	killManager(t, a)
	waitFor(t, 20*testLeaderTTL, "B to take over", b.m.Leader)
	took := time.Now()
	// B's own progress keeps what A knew, for a manager after it.
	waitFor(t, 10*time.Second, "B's progress stored", func() bool { return storedProgress(t, b).At.After(took) })
	if p := storedProgress(t, b).Sessions[sid]; p.HeardAt.Before(heard) {
		t.Fatalf("B's stored progress of the session: heard at %v, want %v or later", p.HeardAt, heard.UTC())
	}
	b.startNode("n1", nodeOpts{}) // restarted: it plays nothing
	r := recordOf(t, path)
	if r.Session != sid || r.BytesSent != 2000 || r.EndedAt.Before(heard) {
		t.Fatalf("record %+v: want it ended at %v or later, bytes_sent 2000", r, heard.UTC())
	}
}

// stalledProgress is a Redis store whose write of the sessions' progress
// (or of state) stalls while hold is set (entered says it does; gate ends the stall;
// written says the write returned), and whose planner lock is lost (its
// renewals and takes refused) once lost is set.
type stalledProgress struct {
	*store.Redis
	state      string // the state whose write stalls; "" = stateProgress
	hold, lost atomic.Bool
	entered    chan struct{}
	gate       chan struct{}
	open       sync.Once
	written    chan error
}

func (s *stalledProgress) PutState(ctx context.Context, name string, v []byte) error {
	if name != cmp.Or(s.state, stateProgress) || !s.hold.CompareAndSwap(true, false) {
		return s.Redis.PutState(ctx, name, v)
	}
	close(s.entered)
	<-s.gate
	err := s.Redis.PutState(ctx, name, v)
	s.written <- err
	return err
}

// loseWhileWriting waits for the held write (hold set) to stall, loses
// the planner lock and waits for standby b to take it over.
func (s *stalledProgress) loseWhileWriting(t *testing.T, b *env) {
	t.Helper()
	select {
	case <-s.entered: // the write waits
	case <-time.After(10 * time.Second):
		t.Fatalf("%s not written", cmp.Or(s.state, stateProgress))
	}
	s.lost.Store(true)
	waitFor(t, 20*testLeaderTTL, "B to take over", b.m.Leader)
}

func (s *stalledProgress) RenewLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if s.lost.Load() {
		return false, nil
	}
	return s.Redis.RenewLock(ctx, name, holder, ttl)
}

func (s *stalledProgress) TakeLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, bool, error) {
	if s.lost.Load() {
		return false, false, nil
	}
	return s.Redis.TakeLock(ctx, name, holder, ttl)
}

// TestSessionProgressOfALostLeaderNotWritten: the active manager's write
// of its sessions' progress stalls (its process froze after it checked
// that it leads); meanwhile it loses the planner lock, and the standby
// takes over and writes its own. The stalled write, once it goes on,
// does not overwrite the new active manager's progress: it is bounded by
// the lease.
func TestSessionProgressOfALostLeaderNotWritten(t *testing.T) {
	open, _ := sharedRedis(t)
	st := &stalledProgress{Redis: open(), entered: make(chan struct{}), gate: make(chan struct{}), written: make(chan error, 1)}
	release := func() { st.open.Do(func() { close(st.gate) }) }
	a := newManager(t, "", func(m *Manager) {
		onSharedWithProgress(open, time.Minute, "")(m)
		m.Store = st
	})
	t.Cleanup(release) // before a's Close, which waits for the write
	b := newManager(t, "", onSharedWithProgress(open, time.Minute, ""))
	n, _, _ := startPlaying(t, a, 1000)
	n.stop()
	st.hold.Store(true)
	st.loseWhileWriting(t, b) // A's progress loop writes
	took := time.Now()
	waitFor(t, 10*time.Second, "B's progress stored", func() bool { return storedProgress(t, b).At.After(took) })
	release()
	err := <-st.written
	if p := storedProgress(t, b); !p.At.After(took) {
		t.Fatalf("stored progress of %v (the stalled write: %v): want B's, taken after %v", p.At, err, took)
	}
}

// keepPlannerLock is a Redis store whose Unlock leaves the planner lock:
// its manager's Close leaves it behind, as a crash would, and releases
// its other locks (the node's first report on the standby does not wait
// for them, and the node is not declared dead meanwhile).
type keepPlannerLock struct{ *store.Redis }

func (k keepPlannerLock) Unlock(ctx context.Context, name, holder string) (bool, error) {
	if name == plannerLock {
		return false, nil
	}
	return k.Redis.Unlock(ctx, name, holder)
}

// TestSessionRecordOfANodeBackWithoutItOnTheStandby: the active manager
// dies with the node of a playing session, leaving the planner lock to
// run out; the node comes back restarted, without the session (and
// without saying when its process started), registering with the
// standby before it takes over: the session's record ends when the
// active manager last heard of it, with the bytes it last knew.
func TestSessionRecordOfANodeBackWithoutItOnTheStandby(t *testing.T) {
	open, _ := sharedRedis(t)
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	a := newManager(t, "", func(m *Manager) {
		onSharedWithProgress(open, time.Minute, "")(m)
		m.Store = keepPlannerLock{open()}
	})
	b := newManager(t, "", onSharedWithProgress(open, time.Minute, path))
	n, sid, heard := startPlaying(t, a, 1000)
	n.stop()
	killManager(t, a)
	cut := time.Now()
	b.startNode("n1", nodeOpts{}) // restarted: it plays nothing
	r := recordOf(t, path)
	if r.Session != sid || r.BytesSent != 1000 || !r.BytesSentAsOfReport || r.EndedAt.Before(heard) || r.EndedAt.After(cut) {
		t.Fatalf("record %+v: want it ended at %v or later, before %v, bytes_sent 1000 as of a report", r, heard.UTC(), cut.UTC())
	}
}

// progressReads is a Redis store that counts the reads of the sessions'
// progress.
type progressReads struct {
	*store.Redis
	n atomic.Int32
}

func (p *progressReads) State(ctx context.Context, name string) ([]byte, error) {
	if name == stateProgress {
		p.n.Add(1)
	}
	return p.Redis.State(ctx, name)
}

// TestSessionProgressNotReadAtARegistrationWithTheActiveManager: a node
// registering with the active manager brings a session the table lacks
// (another manager's, loaded then), but the stored progress is this
// manager's own, which tells nothing of it: it is not read (some 100
// bytes a session of the cluster, at every such registration).
func TestSessionProgressNotReadAtARegistrationWithTheActiveManager(t *testing.T) {
	open, _ := sharedRedis(t)
	st := &progressReads{Redis: open()}
	e := newManager(t, "", func(m *Manager) {
		onSharedWithProgress(open, time.Minute, "")(m)
		m.Store = st
	})
	other := store.Session{ID: "0123456789abcdef0123456789abcdef", User: "demo", Title: "t1", Node: "n1", BitrateBps: titleBps,
		State: store.StatePlaying, Protocol: store.ProtoRTSP, AdmittedAt: time.Now(), StartedAt: time.Now(), Manager: "another-manager"}
	if err := st.PutSession(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	before := st.n.Load()
	e.registerWith("n1", other.ID)
	if e.session(other.ID) == nil {
		t.Fatal("the node's session not loaded at its registration")
	}
	if n := st.n.Load() - before; n != 0 {
		t.Fatalf("the progress read %d times at the registration, want none", n)
	}
}
