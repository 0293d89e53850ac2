package acm

import (
	"context"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
)

// TestUndoneAdmissionReadBackIsNotLoaded: a title request refused while
// Redis stalls (its session's write timed out: the admission undone) has
// its entry written when Redis resumes, which the manager deletes; a load
// of the store's sessions that read the entry before that delete (a
// takeover of the planner lock on the store's return, a node's
// registration) no longer adds it to the table: the session is deleted,
// not loaded. It was loaded as an admitted session no viewer would ever
// reach, holding its node's bandwidth and a fill's reservation for
// minutes, and ended as a no-show with a second record.
func TestUndoneAdmissionReadBackIsNotLoaded(t *testing.T) {
	srv := redistest.Start(t)
	r, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var log lockedLog
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck, m.StoreTimeout = r, 5*time.Minute, 300*time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	srv.Pause(t)
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != 503 {
		t.Fatalf("during the stall: %d, want 503", res.StatusCode)
	}
	m := regexp.MustCompile(`msg="admission undone" session=(\S+)`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no admission undone in the log:\n%s", log.String())
	}
	id := m[1]
	srv.Resume()
	waitFor(t, 5*time.Second, "the store seen answering again", func() bool { return !e.m.health.storeDown.Load() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The entry as a load that read it before the manager's delete sees it.
	ghost := store.Session{ID: id, User: "demo", Title: "t2", Node: "n1", State: store.StateAdmitted, Protocol: store.ProtoRTSP,
		BitrateBps: titleBps, AdmittedAt: time.Now(), Manager: e.m.holderID()}
	if err := r.PutSession(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	if n, err := e.m.loadSessions(ctx, ""); n != 0 || err != nil {
		t.Fatalf("sessions loaded: %d %v, want none: the undone admission's entry is no session", n, err)
	}
	for _, s := range e.sessions() {
		if s.GetSessionId() == id {
			t.Fatalf("the undone admission's session is in the table: %+v", s)
		}
	}
	if _, err := r.Session(ctx, id); err == nil {
		t.Fatal("the undone admission's entry is still in the store")
	}
}
