package acm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
)

// gatedManager starts a manager on a gatedRedis over a real redis-server,
// with store_timeout 200 ms, session writes off the front door bounded by
// persistWait, and no periodic health check (a stall's own checks only).
func gatedManager(t *testing.T, persistWait time.Duration, configure func(*Manager)) (*env, *gatedRedis, *store.Redis) {
	t.Helper()
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g := &gatedRedis{Redis: r, storeGate: storeGate{entered: make(chan string, 64)}, srv: srv}
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout, m.persistWait = g, 5*time.Minute, 200*time.Millisecond, persistWait
		if configure != nil {
			configure(m)
		}
	})
	return e, g, r
}

// TestReportDoesNotWaitForTheStore: a load report that changes a session
// (here a session its node says it plays, whose STARTED was lost) does
// not wait for the session's write: while the write hangs at a stalled
// store, the node's next reports are taken and the node stays alive (the
// report waited for the write, up to 10 s, reading no report meanwhile,
// and the node was declared dead after three missed heartbeats); the
// write is made once the store answers.
func TestReportDoesNotWaitForTheStore(t *testing.T) {
	// The write hangs until the gate opens (well within its 30 s): the
	// reports below must come while it does.
	e, g, r := gatedManager(t, 30*time.Second, nil)
	n := e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	a := e.admitOne("t1")
	g.shut()
	n.mu.Lock()
	n.sessions = append(n.sessions, a)
	n.mu.Unlock()
	select {
	case call := <-g.entered:
		if call != "PutSession" {
			t.Fatalf("store call hanging: %s, want the session's write", call)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the report's session write never reached the store")
	}
	before := e.reports("n1")
	waitFor(t, 5*time.Second, "ten more reports taken while the write hangs", func() bool { return e.reports("n1") >= before+10 })
	if info := e.nodeInfo("n1"); !info.GetAlive() {
		t.Fatal("the node was declared dead while a report's session write hung")
	}
	g.mu.Lock()
	failed := len(g.puts)
	g.mu.Unlock()
	if failed != 0 {
		t.Fatal("the session's write gave up before the reports came: they waited for it")
	}
	g.open()
	waitFor(t, 5*time.Second, "the session stored as playing", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err := r.Session(ctx, a)
		return err == nil && s.State == store.StatePlaying
	})
}

// TestBatchWaitsOneTimeoutInAStall: the housekeeping's batch of sessions
// to write (here five no-shows ended at once) meets a stalled store: the
// first delete times out, and the four others make no round trip (the
// batch held the housekeeping a timeout per session, 10 s each by
// default, and node deaths went unseen meanwhile); all five wait for the
// store's return and are deleted then.
func TestBatchWaitsOneTimeoutInAStall(t *testing.T) {
	e, g, r := gatedManager(t, time.Second, func(m *Manager) {
		m.TokenTTL, m.NoShowGrace, m.MaxSessionsPerUser = time.Second, time.Second, -1
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	for range 5 {
		e.admitOne("t1")
	}
	g.shut()
	waitFor(t, 10*time.Second, "the five no-shows waiting for the store", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return len(e.m.pendingWrites) == 5
	})
	calls := map[string]int{}
	for len(g.entered) > 0 {
		calls[<-g.entered]++
	}
	if deletes := calls["DeleteSession"] + calls["DeleteSessionHeldBy"]; deletes != 1 {
		t.Fatalf("deletes that reached the stalled store: %d (%v), want the first only", deletes, calls)
	}
	g.open()
	waitFor(t, 10*time.Second, "the no-shows deleted once the store answers", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ss, _, err := r.Sessions(ctx)
		return err == nil && len(ss) == 0
	})
}

// TestPendingWritesLoggedAtClose: session writes still waiting for a
// stalled store's return when the manager closes are not made, and the
// log says so (they were dropped without a word).
func TestPendingWritesLoggedAtClose(t *testing.T) {
	var log lockedLog
	e, g, _ := gatedManager(t, time.Second, func(m *Manager) {
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	g.shut()
	for i := range 3 {
		e.m.retryLater(nil, store.Session{ID: fmt.Sprintf("ended-%d", i), Manager: e.m.holderID()})
	}
	e.m.Close()
	if !strings.Contains(log.String(), "dropped at close") || !strings.Contains(log.String(), "sessions=3") {
		t.Fatalf("no word of the three writes dropped at close:\n%s", log.String())
	}
}

// TestBatchDoesNotWaitForAWriteInAStall: a session's write given the
// 10 s of the manager's own store work (here 5 s) hangs at a stalled
// store, holding the session's persist lock; a front-door request times
// out meanwhile and the store is taken as stalled. A batch then writing
// the session (a node's report, the housekeeping) makes no round trip
// and does not wait for that write either: it waited for it (up to its
// 5 s), holding the report writer or the housekeeping, per such session.
// The batch's write is made after that one once the store answers.
func TestBatchDoesNotWaitForAWriteInAStall(t *testing.T) {
	e, g, r := gatedManager(t, 5*time.Second, nil)
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	a := e.admitOne("t1")
	e.m.mu.Lock()
	s := e.m.sessions[a]
	e.m.mu.Unlock()
	g.shut()
	t.Cleanup(g.open)
	slow := make(chan error, 1)
	go func() { slow <- e.m.persist(s) }()
	select {
	case call := <-g.entered:
		if call != "PutSession" {
			t.Fatalf("%s hangs, want the session's write", call)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the session's write did not reach the store within 5 s")
	}
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 503 {
		t.Fatalf("a request during the stall: %d, want 503", res.StatusCode)
	}
	if !e.m.health.storeStalled.Load() {
		t.Fatal("the store is not taken as stalled after a request's timeout")
	}
	e.m.mu.Lock()
	s.ClientAddr = "192.0.2.1:1" // a change for the batch to write
	e.m.mu.Unlock()
	start := time.Now()
	failed := e.m.persistAll([]*session{s})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the batch took %v: it waited for the session's hanging write", d)
	}
	e.m.mu.Lock()
	_, waiting := e.m.pendingWrites[a]
	e.m.mu.Unlock()
	if failed != 1 || !waiting {
		t.Fatalf("the batch's write: %d failed, waiting for the store's return %v; want 1, true", failed, waiting)
	}
	g.open()
	select {
	case <-slow:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging write did not end within 10 s of the store's return")
	}
	e.m.noteStall() // the health check reads the store now: it answers
	waitFor(t, 5*time.Second, "the batch's write made", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		got, err := r.Session(ctx, a)
		return err == nil && got.ClientAddr == "192.0.2.1:1"
	})
}
