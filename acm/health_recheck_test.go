package acm

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// refusingStore is a badger store whose calls fail at once while down,
// as calls to a Redis refusing connections (stopped, restarting) do.
type refusingStore struct {
	store.Store
	down atomic.Bool
}

var errRefused = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (r *refusingStore) State(ctx context.Context, name string) ([]byte, error) {
	if r.down.Load() {
		return nil, errRefused
	}
	return r.Store.State(ctx, name)
}

func (r *refusingStore) PutSession(ctx context.Context, s store.Session) error {
	if r.down.Load() {
		return errRefused
	}
	return r.Store.PutSession(ctx, s)
}

func (r *refusingStore) DeleteSession(ctx context.Context, id string) error {
	if r.down.Load() {
		return errRefused
	}
	return r.Store.DeleteSession(ctx, id)
}

func (r *refusingStore) PutState(ctx context.Context, name string, value []byte) error {
	if r.down.Load() {
		return errRefused
	}
	return r.Store.PutState(ctx, name, value)
}

func (r *refusingStore) ReplaceTitles(ctx context.Context, titles []store.Title) error {
	if r.down.Load() {
		return errRefused
	}
	return r.Store.ReplaceTitles(ctx, titles)
}

// A store that refused connections, and answers again, is seen answering
// within moments (/healthz 200 again), not at the next HealthCheck: after
// a Redis restart the manager serving the nodes answered 503 for five
// seconds, long enough for keepalived's two checks to move the virtual IP
// to the other manager.
func TestStoreRefusingSeenBackSoon(t *testing.T) {
	var rs *refusingStore
	e := newManager(t, "", func(m *Manager) {
		m.HealthCheck = 5 * time.Minute
		st, err := store.OpenBadger(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		rs = &refusingStore{Store: st}
		m.Store = rs
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	rs.down.Store(true)
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 503 {
		t.Fatalf("with the store refusing: %d %q, want 503", res.StatusCode, res.StatusMessage)
	}
	if !e.m.health.storeDown.Load() {
		t.Fatal("the store not taken as down")
	}
	rs.down.Store(false)
	waitFor(t, 5*time.Second, "the store seen answering again", func() bool { return !e.m.health.storeDown.Load() })
	if res := e.get("GET", "/healthz", "", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz once the store answers: %d", res.StatusCode)
	}
}
