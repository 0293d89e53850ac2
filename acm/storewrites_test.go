package acm

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
)

// probedStore is a real store that tells when the manager's health check
// has read or written its probe.
type probedStore struct {
	store.Store
	probed chan struct{} // a value after each probe (dropped when full)
}

func (p *probedStore) note(name string) {
	if name == stateHealthProbe || name == stateWriteProbe {
		select {
		case p.probed <- struct{}{}:
		default:
		}
	}
}

func (p *probedStore) State(ctx context.Context, name string) ([]byte, error) {
	b, err := p.Store.State(ctx, name)
	p.note(name)
	return b, err
}

func (p *probedStore) PutState(ctx context.Context, name string, v []byte) error {
	err := p.Store.PutState(ctx, name, v)
	p.note(name)
	return err
}

// refuseWrites has srv's Redis refuse every write (maxmemory 1 with
// noeviction: "OOM command not allowed"), or take them again (maxmemory
// 0); reads and deletes still go through.
func refuseWrites(t *testing.T, srv *redistest.Server, refuse bool) {
	t.Helper()
	c := srv.Client(t)
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	max := "0"
	if refuse {
		max = "1"
	}
	if err := c.ConfigSet(ctx, "maxmemory", max).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestStoreRefusingWritesIsNotReady: a Redis that answers reads but
// refuses every write (maxmemory reached with noeviction: "OOM command not
// allowed") admits no one, and the manager says so: /healthz stays 503
// through its health checks, which write while writes fail, until Redis
// takes writes again. (The checks only read, which Redis allowed: /healthz
// went back to 200 between refused requests, and a load balancer kept
// sending viewers to a manager that refused them all.)
func TestStoreRefusingWritesIsNotReady(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ps := &probedStore{Store: r, probed: make(chan struct{}, 1)}
	e := newManager(t, "", func(m *Manager) { m.Store, m.HealthCheck = ps, 200*time.Millisecond })
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("before: %d", res.StatusCode)
	}
	ctx := context.Background()
	refuseWrites(t, srv, true)
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 503 || !strings.Contains(res.StatusMessage, "store is unavailable") {
		t.Fatalf("Redis refusing writes: %d %q, want 503 saying the store is unavailable", res.StatusCode, res.StatusMessage)
	}
	// Calls that store nothing new go through: the delete of the refused
	// session (Redis takes deletes at maxmemory), a catalog refresh that
	// finds it unchanged. Neither says Redis takes writes.
	if err := e.m.refreshCatalog(ctx, 5*time.Second); err != nil {
		t.Fatalf("catalog refresh: %v", err)
	}
	if !e.m.health.storeDown.Load() {
		t.Fatal("taken as ready after calls that stored nothing, while Redis refuses writes")
	}
	for range 3 { // health checks after the refusal
		select {
		case <-ps.probed:
		case <-time.After(10 * time.Second):
			t.Fatal("no health check within 10 s")
		}
	}
	if code, body := probe(t, e.m, "/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz while Redis refuses writes: %d %q, want 503", code, body)
	}
	refuseWrites(t, srv, false)
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok")
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 302 {
		t.Fatalf("Redis taking writes again: %d, want 302", res.StatusCode)
	}
}

// A standby is not ready while its store refuses writes: it writes
// nothing but its tries at the planner lock, and its /healthz stayed 200
// while Redis refused every write (maxmemory with noeviction), so that a
// VIP moved to it from an active manager that had gone not ready for
// the same cause. It is ready again once Redis takes writes.
func TestStandbyNotReadyWhileTheStoreRefusesWrites(t *testing.T) {
	open, srv := sharedRedis(t)
	_, b := activeAndStandby(t, open, testTitles, func(m *Manager) { m.HealthCheck = 100 * time.Millisecond })
	awaitProbe(t, b.m, "/healthz", http.StatusOK, "ok")
	refuseWrites(t, srv, true)
	awaitProbe(t, b.m, "/healthz", http.StatusServiceUnavailable, "store unavailable")
	refuseWrites(t, srv, false)
	awaitProbe(t, b.m, "/healthz", http.StatusOK, "ok")
	if b.m.Leader() {
		t.Fatal("the standby took the planner lock")
	}
}
