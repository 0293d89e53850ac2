package acm

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
)

// watchedStore is a real store that tells when the manager's health
// check has read it, and counts session writes.
type watchedStore struct {
	store.Store
	probed chan struct{} // a value after each health check's read (dropped when full)
	puts   atomic.Int64
}

func (w *watchedStore) State(ctx context.Context, name string) ([]byte, error) {
	b, err := w.Store.State(ctx, name)
	if name == stateHealthProbe {
		select {
		case w.probed <- struct{}{}:
		default:
		}
	}
	return b, err
}

func (w *watchedStore) PutSession(ctx context.Context, s store.Session) error {
	w.puts.Add(1)
	return w.Store.PutSession(ctx, s)
}

// lockedLog is a log sink safe to read while the manager writes to it.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStoreStallRefusedWithinStoreTimeout: the manager's Redis stalls
// (its process stopped: alive, its port open, answering nothing). A
// request that arrives before any health check has noticed is refused
// (RTSP 503 with Retry-After) once store_timeout has passed, by that
// timeout, not after go-redis's read timeouts and retries; nothing stays
// reserved, and the store is taken as unavailable at once: the next
// request (HTTP) is refused without a store round trip. Once Redis runs
// again, the next health check finds it and requests are admitted again;
// the entry of the refused session, written by Redis when it resumed,
// is deleted.
func TestStoreStallRefusedWithinStoreTimeout(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	// The health check every 2 s, answered within 300 ms: a request sent
	// right after a check has about 2 s before the next one could notice
	// the stall, so the request meets it first.
	ws := &watchedStore{Store: r, probed: make(chan struct{}, 1)}
	var log lockedLog
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout = ws, 2*time.Second, 300*time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	first := e.describe("demo", "demo", "t1")
	if first.StatusCode != 302 {
		t.Fatalf("before the stall: %d", first.StatusCode)
	}
	reserved := e.reserved("n1")

	select {
	case <-ws.probed:
	default:
	}
	select {
	case <-ws.probed:
	case <-time.After(10 * time.Second):
		t.Fatal("no health check within 10 s")
	}
	unavailable := testutil.ToFloat64(requestsTotal.WithLabelValues(store.ProtoRTSP, outcomeUnavailable))
	srv.Pause(t)

	asked := time.Now()
	res := e.describe("demo", "demo", "t2")
	if res.StatusCode != 503 || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("during the stall: %d %v, want 503 with Retry-After", res.StatusCode, res.Header)
	}
	if d := time.Since(asked); d > 2500*time.Millisecond {
		t.Fatalf("refused after %v, want about store_timeout (300ms), before go-redis's read timeout (3 s)", d)
	}
	if got := testutil.ToFloat64(requestsTotal.WithLabelValues(store.ProtoRTSP, outcomeUnavailable)) - unavailable; got != 1 {
		t.Fatalf("during the stall: %v more rtsp requests with outcome %q, want 1", got, outcomeUnavailable)
	}
	if !strings.Contains(log.String(), "the store did not answer within store_timeout (300ms)") {
		t.Fatalf("the refusal is not the store timeout's; log:\n%s", log.String())
	}
	if !e.m.health.storeDown.Load() {
		t.Fatal("the store is not taken as unavailable after its timeout")
	}
	if got := e.reserved("n1"); got != reserved {
		t.Fatalf("during the stall: %d bit/s reserved, want the first session's %d", got, reserved)
	}

	puts := ws.puts.Load()
	hres := e.get("GET", "/vod/t3.ts", "demo", "demo")
	if hres.StatusCode != http.StatusServiceUnavailable || hres.Header.Get("Retry-After") == "" {
		t.Fatalf("the next request: %d %v, want 503 with Retry-After", hres.StatusCode, hres.Header)
	}
	if ws.puts.Load() != puts {
		t.Fatal("the next request asked the store, taken as unavailable")
	}
	if !strings.Contains(log.String(), "admission refused at once: the store is unavailable") {
		t.Fatalf("the next request was not refused for the store taken as unavailable; log:\n%s", log.String())
	}

	srv.Resume()
	waitFor(t, 10*time.Second, "the store seen answering again", func() bool { return !e.m.health.storeDown.Load() })
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 302 {
		t.Fatalf("after the stall: %d", res.StatusCode)
	}
	var live []string
	for _, s := range e.sessions() {
		live = append(live, s.GetSessionId())
	}
	slices.Sort(live)
	if len(live) != 2 {
		t.Fatalf("sessions after the stall: %v, want the first and the last", live)
	}
	waitFor(t, 10*time.Second, "the store holding only the live sessions", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ss, _, err := r.Sessions(ctx)
		if err != nil {
			return false
		}
		var ids []string
		for _, s := range ss {
			ids = append(ids, s.ID)
		}
		return slices.Equal(ids, live)
	})
}

// TestStoreTimeoutNotForASlowStore: a store that answers, slowly (each
// round trip 100 ms), is not taken as unavailable, neither by the
// requests' writes nor by the health checks (every 50 ms here, so each
// takes longer than its interval): requests are admitted within the
// default store_timeout.
func TestStoreTimeoutNotForASlowStore(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	slow := &slowStore{Store: r, delay: 100 * time.Millisecond}
	var log lockedLog
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck = slow, 50*time.Millisecond // checks slower than their interval
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	if e.m.StoreTimeout != DefaultStoreTimeout {
		t.Fatalf("StoreTimeout %v, want the default %v", e.m.StoreTimeout, DefaultStoreTimeout)
	}
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	for _, title := range []string{"t1", "t2", "t3"} {
		if res := e.describe("demo", "demo", title); res.StatusCode != 302 {
			t.Fatalf("%s on a slow store: %d", title, res.StatusCode)
		}
		if e.m.health.storeDown.Load() {
			t.Fatalf("%s: a store answering in 100 ms taken as unavailable", title)
		}
	}
	if strings.Contains(log.String(), "store unavailable") {
		t.Fatalf("a store answering in 100 ms taken as unavailable; log:\n%s", log.String())
	}
	if slow.calls.Load() < 3 {
		t.Fatalf("%d store calls: the sessions were not written through the slow store", slow.calls.Load())
	}
}

// slowStore is a real store whose session writes and state reads each
// take delay longer (a store far away, or busy), within their deadline.
type slowStore struct {
	store.Store
	delay time.Duration
	calls atomic.Int64
}

func (s *slowStore) wait(ctx context.Context) error {
	s.calls.Add(1)
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowStore) State(ctx context.Context, name string) ([]byte, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Store.State(ctx, name)
}

func (s *slowStore) PutSession(ctx context.Context, ss store.Session) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.PutSession(ctx, ss)
}

func (s *slowStore) DeleteSession(ctx context.Context, id string) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.DeleteSession(ctx, id)
}
