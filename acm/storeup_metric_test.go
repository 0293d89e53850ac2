package acm

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"vodcluster/acm/store"
)

// The store's outage has a metric of its own, vodcluster_store_up: 1
// while it answers, 0 while the manager takes it as unavailable (as
// /healthz says), 1 again once it answers; it showed only as
// vodcluster_leader 0, which a standby shows too.
func TestStoreUpMetric(t *testing.T) {
	b, err := store.OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ds := &downStore{Store: b}
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck = ds, 20*time.Millisecond
		withMetrics(m)
	})
	if text := scrape(t, e.m); !strings.Contains(text, "\nvodcluster_store_up 1\n") {
		t.Fatalf("/metrics with the store answering, want vodcluster_store_up 1:\n%s", text)
	}
	ds.down.Store(true)
	awaitProbe(t, e.m, "/healthz", http.StatusServiceUnavailable, "not ready: store unavailable")
	if text := scrape(t, e.m); !strings.Contains(text, "\nvodcluster_store_up 0\n") {
		t.Fatalf("/metrics with the store unavailable, want vodcluster_store_up 0:\n%s", text)
	}
	ds.down.Store(false)
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok")
	if text := scrape(t, e.m); !strings.Contains(text, "\nvodcluster_store_up 1\n") {
		t.Fatalf("/metrics with the store back, want vodcluster_store_up 1:\n%s", text)
	}
}
