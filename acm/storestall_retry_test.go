package acm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// waitRetried waits until the manager's log says the store's return was
// met by its waiting session writes (retryWrites).
func waitRetried(t *testing.T, log *lockedLog) {
	t.Helper()
	waitFor(t, 10*time.Second, "the waiting session writes made", func() bool {
		return strings.Contains(log.String(), "after the store's return")
	})
}

// stallReportWrite shuts g and has n's next report change session a (its
// STARTED was lost: the report marks it playing), and waits until that
// write failed at the stalled store and waits for its return.
func stallReportWrite(t *testing.T, e *env, g *gatedRedis, n *fakeNode, a string) {
	t.Helper()
	g.shut()
	t.Cleanup(g.open)
	n.mu.Lock()
	n.sessions = append(n.sessions, a)
	n.mu.Unlock()
	waitFor(t, 10*time.Second, "the session's write waiting for the store", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		_, ok := e.m.pendingWrites[a]
		return ok
	})
}

// TestRetriedWriteMadeWhenTheStoreAnswers: a live session's write that
// failed at a stalled store is made, with the session's state then, when
// the store answers: the store does not keep its older state (admitted)
// for a standby to load.
func TestRetriedWriteMadeWhenTheStoreAnswers(t *testing.T) {
	var log lockedLog
	e, g, r := gatedManager(t, 300*time.Millisecond, func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	n := e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	a := e.admitOne("t1")
	stallReportWrite(t, e, g, n, a)
	g.open()
	waitRetried(t, &log)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := r.Session(ctx, a)
	if err != nil || got.State != store.StatePlaying || got.Manager != e.m.holderID() {
		t.Fatalf("the session's entry after the store's return: %+v %v, want playing, this manager's", got, err)
	}
}

// TestRetriedWriteSparesATakenOverSession: a live session's write fails
// at a stalled store and waits for its return; meanwhile another manager
// took the session's entry over (its node moved to that manager, which
// rewrote the entry as its own, while this one still held the planner
// lock). When the store answers, the waiting write leaves that entry
// alone: written as this manager's, it would be this manager's to delete
// when the session, orphaned here, ends after restore_grace, and the
// other manager's live session would lose its entry.
func TestRetriedWriteSparesATakenOverSession(t *testing.T) {
	var log lockedLog
	e, g, r := gatedManager(t, 300*time.Millisecond, func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	if !e.m.Leader() {
		t.Fatal("the only manager does not hold the planner lock")
	}
	n := e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	a := e.admitOne("t1")
	stallReportWrite(t, e, g, n, a)
	e.m.mu.Lock()
	other := e.m.sessions[a].Session
	e.m.mu.Unlock()
	other.Manager = "other-manager"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.PutSession(ctx, other); err != nil {
		t.Fatal(err)
	}

	g.open()
	waitRetried(t, &log)
	got, err := r.Session(ctx, a)
	if err != nil || got.Manager != "other-manager" {
		t.Fatalf("the other manager's entry after the waiting write: manager %q, %v; want it kept", got.Manager, err)
	}
}

// TestReportWriteAfterTheWriterStopped: a load report taken as the
// manager closes (its front doors and gRPC server stop after its
// goroutines are told to, and a report handler may still be running
// when they are gone) still writes its sessions: they were queued for
// the report writer, which had made its last writes and returned, and
// were lost (the store kept the session as admitted).
func TestReportWriteAfterTheWriterStopped(t *testing.T) {
	e, _, r := gatedManager(t, time.Second, nil)
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	a := e.admitOne("t1")
	e.m.mu.Lock()
	s := e.m.sessions[a]
	e.m.mu.Unlock()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	// As report does for a session its node plays, whose STARTED was lost.
	e.m.mu.Lock()
	s.State, s.StartedAt = store.StatePlaying, time.Now()
	e.m.mu.Unlock()
	e.m.persistLater([]*session{s})
	waitFor(t, 5*time.Second, "the session stored as playing", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		got, err := r.Session(ctx, a)
		return err == nil && got.State == store.StatePlaying
	})
}

// TestRetriedDeleteSparesTheSessionLoadedAgain: an ended session's delete
// waits for a stalled store; meanwhile the session is back in the table,
// loaded afresh from its entry (its node registered again and still
// plays it: registerHook, or a takeover). When the store answers, the
// waiting delete leaves the entry alone: it is the live session's now,
// and deleting it left the session with no entry (a standby taking over
// would not know it).
func TestRetriedDeleteSparesTheSessionLoadedAgain(t *testing.T) {
	var log lockedLog
	e, g, r := gatedManager(t, 300*time.Millisecond, func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	a := e.admitOne("t1")
	e.m.mu.Lock()
	old := e.m.sessions[a]
	e.m.endLocked(old, "test: its node did not come back")
	old.forget = true
	e.m.mu.Unlock()
	g.shut()
	t.Cleanup(g.open)
	if failed := e.m.persistAll([]*session{old}); failed != 1 {
		t.Fatalf("deletes failed at the stalled store: %d, want 1", failed)
	}
	e.m.mu.Lock()
	_, waiting := e.m.pendingWrites[a]
	e.m.mu.Unlock()
	if !waiting {
		t.Fatal("the delete does not wait for the store's return")
	}
	// The store's session list is read past the gate (gatedRedis).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := e.m.loadSessions(ctx, "n1"); n != 1 || err != nil {
		t.Fatalf("sessions loaded again: %d %v, want 1", n, err)
	}
	g.open()
	waitRetried(t, &log)
	if _, err := r.Session(ctx, a); err != nil {
		t.Fatalf("the entry of the session loaded again: %v, want it kept", err)
	}
	e.m.mu.Lock()
	back := e.m.sessions[a]
	e.m.mu.Unlock()
	if back == nil || back == old {
		t.Fatal("the session is not in the table as loaded again")
	}
}

// TestQueuedDeleteSparesTheSessionLoadedAgain: a load report ends a
// session (its node's first report after registering leaves it out) and
// its delete is queued behind another write that waits for a slow store;
// meanwhile the session is back in the table, loaded afresh from its
// entry (the node registered again and plays it). The queued delete is
// then not made: it removed the live session's entry.
func TestQueuedDeleteSparesTheSessionLoadedAgain(t *testing.T) {
	e, g, r := gatedManager(t, 30*time.Second, nil)
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	a, b, c := e.admitOne("t1"), e.admitOne("t2"), e.admitOne("t3")
	e.m.mu.Lock()
	sa, sb, sc := e.m.sessions[a], e.m.sessions[b], e.m.sessions[c]
	// A change to write (kept admitted: a playing session its node does
	// not list would end).
	sb.ClientAddr, sc.ClientAddr = "192.0.2.1:1", "192.0.2.1:1"
	e.m.mu.Unlock()
	g.shut()
	t.Cleanup(g.open)
	e.m.persistLater([]*session{sb}) // the writer waits for the store
	select {
	case call := <-g.entered:
		if call != "PutSession" {
			t.Fatalf("store call hanging: %s, want the write of b", call)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write of b never reached the store")
	}
	e.m.mu.Lock()
	e.m.endLocked(sa, "test: not on its node after the node registered")
	e.m.mu.Unlock()
	e.m.persistLater([]*session{sa})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := e.m.loadSessions(ctx, "n1"); n != 1 || err != nil {
		t.Fatalf("sessions loaded again: %d %v, want 1", n, err)
	}
	g.open()
	// The writer makes the queued writes in order: once c's is made, so
	// are those queued before it.
	e.m.persistLater([]*session{sc})
	waitFor(t, 5*time.Second, "the queued writes made", func() bool {
		got, err := r.Session(ctx, c)
		return err == nil && got.ClientAddr == "192.0.2.1:1"
	})
	got, err := r.Session(ctx, b)
	if err != nil || got.ClientAddr != "192.0.2.1:1" {
		t.Fatalf("b after the store answered: %+v %v, want written", got, err)
	}
	if _, err := r.Session(ctx, a); err != nil {
		t.Fatalf("the entry of the session loaded again: %v, want it kept", err)
	}
}

// TestRetriedClaimMadeWhenTheStoreAnswers: a manager taking over (the
// planner lock) claims the sessions of the store it did not hold (their
// entries name the previous manager); the claim's write fails at a
// stalled store and waits for its return. It is then made over the
// previous manager's entry, which this manager does not hold yet; and a
// claimed session that ended meanwhile has its entry deleted. Both were
// left as the previous manager's: the entry of a live session named a
// manager that no longer held it, and that of an ended one stayed in the
// store (deleteOwn spared it) until another takeover. A claimed session
// orphaned meanwhile (its node died here, and may be back with the
// previous manager) keeps the previous manager's entry.
func TestRetriedClaimMadeWhenTheStoreAnswers(t *testing.T) {
	for _, then := range []string{"live", "ended", "orphaned"} {
		t.Run(then, func(t *testing.T) {
			var log lockedLog
			e, g, r := gatedManager(t, 300*time.Millisecond, func(m *Manager) {
				m.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			n := e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, prev := stalledClaim(t, e, g, r, n)
			switch then {
			case "ended":
				endAndPersist(e, s)
			case "orphaned":
				// Its node left here: it may have gone back to the
				// previous manager, whose entry is left alone.
				n.leave()
				waitFor(t, 5*time.Second, "the session orphaned", func() bool {
					e.m.mu.Lock()
					defer e.m.mu.Unlock()
					return !s.reserved
				})
			}
			g.open()
			waitRetried(t, &log)
			got, err := r.Session(ctx, prev.ID)
			want := map[string]string{"live": e.m.holderID(), "orphaned": "previous-manager"}[then]
			switch {
			case then == "ended" && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("the claimed session ended: its entry %+v %v, want it deleted", got, err)
			case then != "ended" && (err != nil || got.Manager != want):
				t.Fatalf("the claimed session's entry: manager %q, %v; want %q", got.Manager, err, want)
			}
		})
	}
}

// stalledClaim writes a session of "previous-manager" on node n to the
// store, which n plays, and has e take it over (a takeover's load) with
// g shut: the claim's write hangs there and waits for the store's
// return. It returns the session and the entry it was claimed over.
func stalledClaim(t *testing.T, e *env, g *gatedRedis, r *store.Redis, n *fakeNode) (*session, store.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	prev := store.Session{ID: "0123456789abcdef0123456789abcdef", User: "demo", Title: "t1", Node: n.id, BitrateBps: titleBps,
		State: store.StatePlaying, Protocol: store.ProtoRTSP, AdmittedAt: time.Now(), Manager: "previous-manager"}
	if err := r.PutSession(ctx, prev); err != nil {
		t.Fatal(err)
	}
	n.setSessions(prev.ID) // the node plays it
	g.shut()
	t.Cleanup(g.open)
	// A takeover's load: the store's session list is read past the gate
	// (gatedRedis), the claim's write hangs there.
	if n, err := e.m.loadSessions(ctx, ""); n != 1 || err != nil {
		t.Fatalf("sessions loaded: %d %v, want 1", n, err)
	}
	e.m.mu.Lock()
	s := e.m.sessions[prev.ID]
	_, waiting := e.m.pendingWrites[prev.ID]
	e.m.mu.Unlock()
	if s == nil || !waiting {
		t.Fatalf("the claim's write does not wait for the store's return (in the table: %v)", s != nil)
	}
	return s, prev
}

// endAndPersist ends s as its viewer's leaving does, and persists it.
func endAndPersist(e *env, s *session) {
	e.m.mu.Lock()
	e.m.endLocked(s, "test: its viewer left")
	e.m.mu.Unlock()
	e.m.persistAll([]*session{s})
}
