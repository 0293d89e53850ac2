package acm

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// stallingStore is a badger store whose state reads and writes, session
// writes and deletes and catalog writes hang while it is stalled, its
// gate shut (as a Redis stopped by SIGSTOP does): until their deadline,
// or until it resumes, its gate open, when they are made.
type stallingStore struct {
	store.Store
	storeGate
	probes atomic.Int64 // the health check's reads (stateHealthProbe)
}

func (s *stallingStore) State(ctx context.Context, name string) ([]byte, error) {
	if name == stateHealthProbe {
		s.probes.Add(1)
	}
	if err := s.hang(ctx, "State"); err != nil {
		return nil, err
	}
	return s.Store.State(ctx, name)
}

func (s *stallingStore) PutState(ctx context.Context, name string, value []byte) error {
	if err := s.hang(ctx, "PutState"); err != nil {
		return err
	}
	return s.Store.PutState(ctx, name, value)
}

func (s *stallingStore) PutSession(ctx context.Context, ss store.Session) error {
	if err := s.hang(ctx, "PutSession"); err != nil {
		return err
	}
	return s.Store.PutSession(ctx, ss)
}

func (s *stallingStore) DeleteSession(ctx context.Context, id string) error {
	if err := s.hang(ctx, "DeleteSession"); err != nil {
		return err
	}
	return s.Store.DeleteSession(ctx, id)
}

func (s *stallingStore) ReplaceTitles(ctx context.Context, titles []store.Title) error {
	if err := s.hang(ctx, "ReplaceTitles"); err != nil {
		return err
	}
	return s.Store.ReplaceTitles(ctx, titles)
}

// TestHealthzChecksAStoreNotHeardFrom: /healthz answers from what the
// manager knows while its store answered within the last second, and
// otherwise checks the store first: a stalled store makes it answer 503
// "store did not answer" within healthzWait, probes asked at once sharing
// one read, though no store call of the manager's own timed out (a
// standby's /healthz answered 200 from its last health check, up to
// HealthCheck old, and keepalived moved the VIP to it while its pair,
// whose session write had timed out, answered 503). The store is not
// taken as unavailable before StoreTimeout; past it, it is, as after the
// health loop's read (the next probe answers 503 at once); /healthz
// answers 200 once the store answers again.
func TestHealthzChecksAStoreNotHeardFrom(t *testing.T) {
	b, err := store.OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ss := &stallingStore{Store: b}
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout = ss, 5*time.Minute, 3*time.Second
	})
	t.Cleanup(ss.open)
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok")

	// Heard from just now: no store call.
	e.m.noteAnswered()
	before := ss.probes.Load()
	if code, body := probe(t, e.m, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with the store just heard from: %d %q", code, body)
	}
	if n := ss.probes.Load() - before; n != 0 {
		t.Fatalf("/healthz with the store just heard from read it %d times, want none", n)
	}

	ss.shut()
	e.m.health.answered.Store(0) // not heard from since: as after healthzFresh
	const probes = 4
	codes, bodies := make([]int, probes), make([]string, probes)
	var wg sync.WaitGroup
	for i := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], bodies[i] = probe(t, e.m, "/healthz")
		}()
	}
	wg.Wait()
	for i := range probes {
		if codes[i] != http.StatusServiceUnavailable || bodies[i] != "not ready: store did not answer\n" {
			t.Errorf("/healthz %d with the store stalled: %d %q, want 503 \"not ready: store did not answer\"", i, codes[i], bodies[i])
		}
	}
	if n := ss.probes.Load() - before; n != 1 {
		t.Errorf("%d probes at once read the store %d times, want once", probes, n)
	}
	if e.m.health.storeDown.Load() {
		t.Error("the store taken as unavailable before StoreTimeout")
	}
	waitFor(t, 10*time.Second, "the check's timeout noted as a stall", func() bool {
		return e.m.health.storeDown.Load() && e.m.health.storeStalled.Load()
	})
	if code, body := probe(t, e.m, "/healthz"); code != http.StatusServiceUnavailable || body != "not ready: store unavailable\n" {
		t.Fatalf("/healthz with the store taken as stalled: %d %q, want 503 \"not ready: store unavailable\"", code, body)
	}
	ss.open()
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok")
}

// TestHealthzStandbyNotReadyWhileRedisStalls: two managers on one Redis,
// which stalls (SIGSTOP). The active manager's title request times out
// and it answers /healthz 503; the standby, which made no store call
// since, answers 503 too when asked (it answered 200 from its health
// check of up to 5 s before, and keepalived's check script moved the VIP
// to it, whose planner lock it then lost at the next stall): the check
// script keeps the VIP where it is. Both answer 200 once Redis does.
func TestHealthzStandbyNotReadyWhileRedisStalls(t *testing.T) {
	open, srv := sharedRedis(t)
	conf := func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		m.HealthCheck, m.LeaderTTL = 5*time.Minute, time.Minute
	}
	a, b := newManager(t, "", conf), newManager(t, "", conf)
	if !a.m.Leader() || b.m.Leader() {
		t.Fatalf("leaders: a %v, b %v; want a alone", a.m.Leader(), b.m.Leader())
	}
	a.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	if res := a.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("before the stall: %d %q", res.StatusCode, res.StatusMessage)
	}
	awaitProbe(t, b.m, "/healthz", http.StatusOK, "ok")

	srv.Pause(t)
	if res := a.describe("demo", "demo", "t2"); res.StatusCode != 503 {
		t.Fatalf("on the active manager during the stall: %d %q, want 503", res.StatusCode, res.StatusMessage)
	}
	if code, body := probe(t, a.m, "/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("the active manager's /healthz during the stall: %d %q, want 503", code, body)
	}
	// The request waited store_timeout (2 s) for Redis: the standby has
	// not heard from it for as long.
	if code, body := probe(t, b.m, "/healthz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: store ") {
		t.Fatalf("the standby's /healthz during the stall: %d %q, want 503 naming the store", code, body)
	}
	if _, err := exec.LookPath("curl"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := exec.CommandContext(ctx, "sh", "../deploy/keepalived/check_manager.sh",
			"http://"+a.m.HTTPAddr()+"/healthz", "http://"+b.m.HTTPAddr()+"/healthz").Run()
		cancel()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("check_manager.sh on the active manager's host during the stall: %v, want exit 0 (the VIP stays)", err)
		} else if err != nil {
			t.Fatal(err)
		}
	}

	srv.Resume()
	awaitProbe(t, b.m, "/healthz", http.StatusOK, "ok")
	awaitProbe(t, a.m, "/healthz", http.StatusOK, "ok")
}
