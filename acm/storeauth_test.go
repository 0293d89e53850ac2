package acm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/acm/store/redistest"
	"vodcluster/proto/logtest"
)

// The Redis's password changes while the manager runs (CONFIG SET
// requirepass, its connections closed as a restart would): the manager's
// log line for the outage names the settings to check, as its start does
// (it gave the Redis's WRONGPASS alone), once per outage however many
// calls fail; one that began otherwise (a Redis restarted with a new
// password refused connections first) is told so at the first refusal
// of the credentials; and the next outage is told again.
func TestStorePasswordChangedNamesTheSetting(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "old-pass")
	st, err := store.OpenRedis(store.RedisOptions{Addr: srv.Addr, Password: "old-pass", Prefix: t.Name() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		onShared(st, nil, time.Minute)(m)
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	ctx := context.Background()
	admin := srv.Client(t)
	setPassword := func(pass string) {
		t.Helper()
		if err := admin.ConfigSet(ctx, "requirepass", pass).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	check := func() error { c := e.m.checkStore(); <-c.done; return c.err }
	// the store's lines (the planner lock's loss names it too: below)
	const setting = "it refuses the manager's credentials: check store.redis_password, and store.redis_username"
	told := func() int { return strings.Count(log.String(), setting) }

	setPassword("new-pass")
	if err := check(); !errors.As(err, new(*store.AuthError)) {
		t.Fatalf("the store's read after the password changed: %v, want the Redis refusing the credentials", err)
	}
	res := e.describe("demo", "demo", "t1") // refused at once: the store is unavailable
	if res.StatusCode != 503 {
		t.Fatalf("a request while the Redis refuses the manager: %d %q", res.StatusCode, res.StatusMessage)
	}
	for range 3 {
		check()
	}
	line := logLine(t, log.String(), "store unavailable: not ready")
	if !strings.Contains(line, setting) || !strings.Contains(line, "WRONGPASS") {
		t.Fatalf("the outage's line does not name the setting:\n%s", line)
	}
	if n := told(); n != 1 {
		t.Fatalf("the setting named %d times in one outage, want once:\n%s", n, log.String())
	}
	// The planner lock, whose renewals fail, is lost for the credentials,
	// not for a store that "does not answer".
	waitFor(t, 5*time.Second, "the planner lock lost", func() bool { return strings.Contains(log.String(), "planner lock lost") })
	if line := logLine(t, log.String(), "planner lock lost"); !strings.Contains(line, "planner lock lost: the store refuses the manager's credentials (check store.redis_password") {
		t.Fatalf("the planner lock's loss:\n%s", line)
	}

	// Back, the store answers; the password changes again: the next
	// outage names the setting again.
	setPassword("old-pass")
	waitFor(t, 5*time.Second, "the store to answer again", func() bool { err := check(); return err == nil || errors.Is(err, store.ErrNotFound) })
	setPassword("newer-pass")
	check()
	check()
	if n := told(); n != 2 || strings.Count(log.String(), "store unavailable: not ready (/healthz 503) until it answers: "+setting) != 2 {
		t.Fatalf("the setting named %d times over two outages, want once in each outage's line:\n%s", n, log.String())
	}
}

// authStore fails every read of a state with the error err holds while
// it holds one.
type authStore struct {
	store.Store
	err atomic.Pointer[error]
}

func (a *authStore) State(ctx context.Context, name string) ([]byte, error) {
	if err := a.err.Load(); err != nil {
		return nil, *err
	}
	return a.Store.State(ctx, name)
}

// An outage that began otherwise (a Redis restarted with a new password
// refuses connections first, then the credentials) names the settings at
// the first refusal of the credentials, in a line of its own, once.
func TestStoreRefusingCredentialsLateInAnOutageNamesTheSetting(t *testing.T) {
	b, err := store.OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	as := &authStore{Store: b}
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.Store, m.HealthCheck = as, 5*time.Minute
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	check := func() { c := e.m.checkStore(); <-c.done }
	fail := func(err error) { as.err.Store(&err) }
	fail(errors.New("store: redis: state health-probe: dial tcp 127.0.0.1:6379: connect: connection refused"))
	check()
	if line := logLine(t, log.String(), "store unavailable: not ready"); strings.Contains(line, "store.redis_password") {
		t.Fatalf("a refused connection named the setting:\n%s", line)
	}
	fail(fmt.Errorf("store: redis: state health-probe: %w", &store.AuthError{Addr: "127.0.0.1:6379", Reply: "WRONGPASS invalid username-password pair or user is disabled."}))
	check()
	check()
	line := logLine(t, log.String(), "store.redis_password")
	if !strings.Contains(line, `msg="store still unavailable: it refuses the manager's credentials: check store.redis_password, and store.redis_username`) || !strings.Contains(line, "WRONGPASS") {
		t.Fatalf("the refusal of the credentials:\n%s", line)
	}
}
