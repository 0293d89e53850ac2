package acm

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"vodcluster/acm/boss"
)

// failingBOSS is a subscriber database that fails authentications
// (authDown) or entitlement checks (entitledDown) as one that does not
// answer does.
type failingBOSS struct {
	boss.BOSS
	authDown, entitledDown atomic.Bool
}

var errBOSSTimeout = errors.New("subscriber database: i/o timeout")

func (f *failingBOSS) Authenticate(ctx context.Context, c boss.Credentials) error {
	if f.authDown.Load() {
		return errBOSSTimeout
	}
	return f.BOSS.Authenticate(ctx, c)
}

func (f *failingBOSS) Entitled(ctx context.Context, user, pkg string) (bool, error) {
	if f.entitledDown.Load() {
		return false, errBOSSTimeout
	}
	return f.BOSS.Entitled(ctx, user, pkg)
}

// A subscriber database that does not answer (its login check or its
// entitlement check) is a 503 with Retry-After over RTSP and HTTP that
// says so, not a bare "Service Unavailable": a viewer's support call, or
// the operator reading a player's error, learns which part is down.
func TestBOSSDownSaysSo(t *testing.T) {
	var f *failingBOSS
	e := newManager(t, "", func(m *Manager) {
		f = &failingBOSS{BOSS: m.BOSS}
		m.BOSS = f
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	const why = "the subscriber database does not answer"
	for _, down := range []*atomic.Bool{&f.authDown, &f.entitledDown} {
		down.Store(true)
		res := e.describe("demo", "demo", "t1")
		if res.StatusCode != 503 || !strings.Contains(res.StatusMessage, why) || len(res.Header["Retry-After"]) != 1 {
			t.Fatalf("RTSP: %d %q %v, want 503 saying %q with Retry-After", res.StatusCode, res.StatusMessage, res.Header, why)
		}
		hres, b := e.getBody("/vod/t1.ts", "demo", "demo")
		if hres.StatusCode != 503 || !strings.Contains(b, why) || hres.Header.Get("Retry-After") == "" {
			t.Fatalf("HTTP: %d %q, want 503 saying %q with Retry-After", hres.StatusCode, b, why)
		}
		down.Store(false)
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 302 {
		t.Fatalf("once it answers: %d", res.StatusCode)
	}
	if len(e.sessions()) != 1 {
		t.Fatalf("sessions: %v, want the last request's alone", e.sessions())
	}
}

// A Redis that refuses connections (stopped, restarting) fails the first
// request's write at once, not by a timeout: that answer, too, says the
// session store is unavailable (it was a bare "Service Unavailable"
// until a later request found the store taken as down).
func TestStoreRefusingSaysSo(t *testing.T) {
	open, srv := sharedRedis(t)
	e := newManager(t, "", func(m *Manager) { m.Store = open() })
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	srv.Stop()
	const why = "the cluster's session store is unavailable"
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != 503 || !strings.Contains(res.StatusMessage, why) {
		t.Fatalf("the first request with Redis stopped: %d %q, want 503 saying %q", res.StatusCode, res.StatusMessage, why)
	}
}
