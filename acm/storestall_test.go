package acm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
)

// TestStoreStallEndsWhenTheStoreAnswers: a request times out on a
// stalled Redis (its process stopped) and the store is taken as
// unavailable; once Redis runs again the refusals and /healthz's 503 end
// within moments, not at the next health check (5 minutes here): an
// active manager whose /healthz stayed 503 for a HealthCheck (5 s by
// default) after a Redis pause of two seconds would fail keepalived's two
// checks (4 s) and lose the VIP, its planner lock staying behind. The
// refused session's entry, which Redis wrote when it resumed, is deleted
// as soon as the store answers.
func TestStoreStallEndsWhenTheStoreAnswers(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout = r, 5*time.Minute, 300*time.Millisecond
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("before the stall: %d", res.StatusCode)
	}
	srv.Pause(t)
	// The answers say why (the HTTP body said only "service unavailable").
	const why = "the cluster's session store is unavailable"
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 503 || !strings.Contains(res.StatusMessage, why) {
		t.Fatalf("during the stall: %d %q, want 503 saying %q", res.StatusCode, res.StatusMessage, why)
	}
	if !e.m.health.storeDown.Load() {
		t.Fatal("the store is not taken as unavailable after its timeout")
	}
	if res, b := e.getBody("/vod/t3.ts", "demo", "demo"); res.StatusCode != 503 || !strings.Contains(b, why) {
		t.Fatalf("HTTP during the stall: %d %q, want 503 saying %q", res.StatusCode, b, why)
	}
	if res := e.get("GET", "/healthz", "", ""); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/healthz during the stall: %d, want 503", res.StatusCode)
	}

	srv.Resume()
	resumed := time.Now()
	waitFor(t, 5*time.Second, "the store seen answering again", func() bool { return !e.m.health.storeDown.Load() })
	if d := time.Since(resumed); d > 5*time.Second {
		t.Fatalf("the store seen answering %v after it did, want within moments", d)
	}
	if res := e.get("GET", "/healthz", "", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after the stall: %d, want 200", res.StatusCode)
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != 302 {
		t.Fatalf("after the stall: %d", res.StatusCode)
	}
	live := map[string]bool{}
	for _, s := range e.sessions() {
		live[s.GetSessionId()] = true
	}
	if len(live) != 2 {
		t.Fatalf("sessions after the stall: %v, want t1's and t3's", live)
	}
	waitFor(t, 5*time.Second, "the store holding only the live sessions", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ss, _, err := r.Sessions(ctx)
		if err != nil || len(ss) != len(live) {
			return false
		}
		for _, s := range ss {
			if !live[s.ID] {
				return false
			}
		}
		return true
	})
}

// storeGate holds a fake store's calls while it is shut (as a stalled
// server holds them): hang returns at once while the gate is open, and
// while it is shut waits until the gate opens (nil: the call is then
// made) or until the call's deadline (ctx's error). A fake store embeds
// it and calls hang first in each call it holds.
type storeGate struct {
	entered chan string // a call's name as it starts to hang, if there is room (nil: not told)
	gateMu  sync.Mutex
	gate    chan struct{} // nil: open; closed when it opens
}

// shut holds the calls that start from now on (those already past hang
// are not held); shutting a shut gate changes nothing.
func (g *storeGate) shut() {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	if g.gate == nil {
		g.gate = make(chan struct{})
	}
}

// open lets the held calls and those to come through.
func (g *storeGate) open() {
	g.gateMu.Lock()
	defer g.gateMu.Unlock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
}

// hang waits, while the gate is shut, until it opens (nil) or ctx ends
// (its error), first sending call to entered if it has room.
func (g *storeGate) hang(ctx context.Context, call string) error {
	g.gateMu.Lock()
	gate := g.gate
	g.gateMu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case g.entered <- call:
	default:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-gate:
		return nil
	}
}

// gatedRedis is a real Redis store whose session writes, deletes and
// state reads hang while its gate is shut (as a stalled server's): until
// their deadline, or until the gate opens (then they are made, as a
// server that resumes answers them), so that a test can change the store
// behind the manager's back meanwhile. It keeps the Redis store's planner
// lock (store.Locker).
type gatedRedis struct {
	*store.Redis
	storeGate
	srv *redistest.Server // the server, when gatedManager started it
	// closeAfter, when above 0, shuts the gate once that many deletes
	// (DeleteSessionHeldBy) went through.
	closeAfter atomic.Int64
	mu         sync.Mutex
	puts       []string // ids of the sessions whose write failed at the gate
}

func (g *gatedRedis) PutSession(ctx context.Context, s store.Session) error {
	if err := g.hang(ctx, "PutSession"); err != nil {
		g.mu.Lock()
		g.puts = append(g.puts, s.ID)
		g.mu.Unlock()
		return err
	}
	return g.Redis.PutSession(ctx, s)
}

func (g *gatedRedis) DeleteSession(ctx context.Context, id string) error {
	if err := g.hang(ctx, "DeleteSession"); err != nil {
		return err
	}
	return g.Redis.DeleteSession(ctx, id)
}

func (g *gatedRedis) DeleteSessionHeldBy(ctx context.Context, id, unchanged string, managers ...string) (bool, error) {
	if err := g.hang(ctx, "DeleteSessionHeldBy"); err != nil {
		return false, err
	}
	if g.closeAfter.Load() > 0 && g.closeAfter.Add(-1) == 0 {
		defer g.shut()
	}
	return g.Redis.DeleteSessionHeldBy(ctx, id, unchanged, managers...)
}

func (g *gatedRedis) PutSessionHeldBy(ctx context.Context, s store.Session, unchanged string, managers ...string) (bool, error) {
	if err := g.hang(ctx, "PutSessionHeldBy"); err != nil {
		g.mu.Lock()
		g.puts = append(g.puts, s.ID)
		g.mu.Unlock()
		return false, err
	}
	return g.Redis.PutSessionHeldBy(ctx, s, unchanged, managers...)
}

func (g *gatedRedis) PutState(ctx context.Context, name string, value []byte) error {
	if err := g.hang(ctx, "PutState"); err != nil {
		return err
	}
	return g.Redis.PutState(ctx, name, value)
}

func (g *gatedRedis) State(ctx context.Context, name string) ([]byte, error) {
	if err := g.hang(ctx, "State"); err != nil {
		return nil, err
	}
	return g.Redis.State(ctx, name)
}

// TestStoreRetriedDeleteSparesATakenOverSession: the delete of a session
// the front door ended while the store stalled waits for the store's
// return; meanwhile another manager took the session's entry over (the
// stall outlasted the lease, the nodes moved). When the store answers,
// the waiting delete leaves that manager's entry alone: a delete made
// late removes only an entry this manager still holds.
func TestStoreRetriedDeleteSparesATakenOverSession(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g := &gatedRedis{Redis: r}
	var log lockedLog
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout = g, 5*time.Minute, 200*time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if !e.m.Leader() {
		t.Fatal("the only manager does not hold the planner lock")
	}
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("before the stall: %d", res.StatusCode)
	}
	g.shut()
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 503 {
		t.Fatalf("during the stall: %d, want 503", res.StatusCode)
	}
	g.mu.Lock()
	hung := append([]string(nil), g.puts...)
	g.mu.Unlock()
	if len(hung) != 1 {
		t.Fatalf("session writes that hung: %v, want t2's", hung)
	}
	// Another manager holds the refused session's entry now.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	other := store.Session{ID: hung[0], User: "demo", Title: "t2", Node: "n1", BitrateBps: 1000, State: store.StatePlaying,
		Protocol: store.ProtoRTSP, AdmittedAt: time.Now(), Manager: "other-manager"}
	if err := r.PutSession(ctx, other); err != nil {
		t.Fatal(err)
	}

	g.open()
	waitFor(t, 5*time.Second, "the waiting delete made", func() bool {
		return strings.Contains(log.String(), "store: sessions written and ended sessions deleted after the store's return")
	})
	got, err := r.Session(ctx, other.ID)
	if err != nil || got.Manager != "other-manager" {
		t.Fatalf("the other manager's session after the waiting delete: %+v %v, want it kept", got, err)
	}
}

// TestStoreRetriedDeletesStopAtAStall: the store answers again and the
// deletes waiting for it are made; it stalls again after the first. The
// rest wait for its next return: the health check is held one
// store_timeout, not one per waiting delete (here 19, each up to 5 s), so
// that it reads the store again at once and the store's return ends the
// refusals; once it answers, every waiting delete is made.
func TestStoreRetriedDeletesStopAtAStall(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g := &gatedRedis{Redis: r}
	var log lockedLog
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout = g, 5*time.Minute, 200*time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	for i := range 20 {
		e.m.retryLater(nil, store.Session{ID: fmt.Sprintf("ended-%02d", i), Manager: e.m.holderID()})
	}
	g.closeAfter.Store(1)
	e.m.noteStall() // as a request's write that timed out: the health check reads the store now
	waitFor(t, 5*time.Second, "the retries stopped at the store's new stall", func() bool {
		return strings.Contains(log.String(), "sessions' writes stopped")
	})
	waitFor(t, 5*time.Second, "the store taken as unavailable", func() bool { return e.m.health.storeDown.Load() })
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 503 {
		t.Fatalf("during the new stall: %d, want 503", res.StatusCode)
	}
	g.open()
	waitFor(t, 5*time.Second, "every waiting delete made", func() bool {
		return strings.Contains(log.String(), "sessions written and ended sessions deleted after the store's return\" deleted=19 written=0 left=0")
	})
	e.m.mu.Lock()
	left := len(e.m.pendingWrites)
	e.m.mu.Unlock()
	if left != 0 || e.m.health.storeDown.Load() {
		t.Fatalf("after the store's return: %d deletes waiting, store taken as unavailable %v", left, e.m.health.storeDown.Load())
	}
}

// TestStoreFrontPersistNotHeldByAnotherWrite: a session's write given
// the 10 s of the manager's own store work (a node's report, the
// housekeeping) waits for a stalled store; the front door ends the
// session meanwhile (the same viewer asked again) and persists it: it
// waits store_timeout at most, not for that write's 10 s, and is refused
// as a store timeout. Its delete waits for the store's return and comes
// after that write: the store holds no entry of the session at the end.
func TestStoreFrontPersistNotHeldByAnotherWrite(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	g := &gatedRedis{Redis: r, storeGate: storeGate{entered: make(chan string, 8)}}
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout = g, 5*time.Minute, 200*time.Millisecond
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("before the stall: %d", res.StatusCode)
	}
	e.m.mu.Lock()
	var s *session
	for _, x := range e.m.sessions {
		s = x
	}
	e.m.mu.Unlock()
	if s == nil {
		t.Fatal("no session")
	}

	g.shut()
	t.Cleanup(g.open) // no write left hanging for its 10 s
	slow := make(chan error, 1)
	go func() { slow <- e.m.persist(s) }()
	select {
	case call := <-g.entered:
		if call != "PutSession" {
			t.Fatalf("%s hangs, want the session's write", call)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session's write did not reach the store within 10 s")
	}
	e.m.mu.Lock()
	e.m.endLocked(s, "test: its viewer asked again")
	e.m.mu.Unlock()
	start := time.Now()
	err = e.m.persistFront(s)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the front door's persist took %v, want store_timeout (200ms)", d)
	}
	if !errors.Is(err, errStoreTimeout) {
		t.Fatalf("the front door's persist: %v, want errStoreTimeout", err)
	}

	g.open()
	select {
	case <-slow:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's write did not end within 10 s of the store's return")
	}
	e.m.noteStall() // the health check reads the store now: it answers
	waitFor(t, 5*time.Second, "the session's entry deleted", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := r.Session(ctx, s.ID)
		return errors.Is(err, store.ErrNotFound)
	})
}
