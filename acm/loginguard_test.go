package acm

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

func TestLoginGuardBudget(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := 0; i < 2; i++ {
		if no, _ := g.blocked("10.0.0.1", "alice", t0); no {
			t.Fatalf("blocked after %d failures, budget 2", i)
		}
		g.failed("10.0.0.1", "alice", t0)
	}
	no, wait := g.blocked("10.0.0.1", "alice", t0)
	if !no || wait < 9*time.Second || wait > 10*time.Second {
		t.Fatalf("after 2 failures: blocked %v, wait %v (want about 10s)", no, wait)
	}
	// Another user behind the same address, and the same user elsewhere,
	// are not affected.
	if no, _ := g.blocked("10.0.0.1", "bob", t0); no {
		t.Fatal("another user on the same IP blocked")
	}
	if no, _ := g.blocked("10.0.0.2", "alice", t0); no {
		t.Fatal("the same user on another IP blocked")
	}
	// Asking does not spend: one failure is back after one refill.
	if no, _ := g.blocked("10.0.0.1", "alice", t0.Add(10*time.Second)); no {
		t.Fatal("still blocked after a refill")
	}
	g.failed("10.0.0.1", "alice", t0.Add(10*time.Second))
	if no, _ := g.blocked("10.0.0.1", "alice", t0.Add(10*time.Second)); !no {
		t.Fatal("not blocked after spending the refill")
	}
	if newLoginGuard(-1, time.Second) != nil {
		t.Fatal("a negative budget does not disable the guard")
	}
	var none *loginGuard
	none.failed("10.0.0.1", "alice", t0)
	if no, _ := none.blocked("10.0.0.1", "alice", t0); no {
		t.Fatal("no guard blocks")
	}
}

func TestLoginGuardPrunes(t *testing.T) {
	g := newLoginGuard(1, time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := 0; i < loginGuardMax; i++ {
		g.failed("10.0.0.1", strconv.Itoa(i), t0)
	}
	g.failed("10.0.0.9", "late", t0.Add(time.Minute)) // the others' budgets are whole again
	if len(g.pairs) != 1 {
		t.Fatalf("%d pairs kept, want the new one", len(g.pairs))
	}
	if no, _ := g.blocked("10.0.0.9", "late", t0.Add(time.Minute)); !no {
		t.Fatal("the new pair's failure was lost")
	}
}

// After LoginFailures wrong passwords from one address for one user, that
// user's requests from there are refused without a credential check (RTSP
// 503, HTTP 429, both with Retry-After), even with the right password;
// another user behind the same address still gets in.
func TestFailedLoginsThrottled(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.LoginFailures = 3; m.LoginFailureRefill = time.Hour })
	e.startNode("n1", nodeOpts{})
	for i := 0; i < 3; i++ {
		if res := e.describe("demo", "wrong", "t1"); res.StatusCode != base.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d", i, res.StatusCode)
		}
	}
	checked := len(e.users.used())
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("after 3 failures: %d", res.StatusCode)
	}
	if s, err := strconv.Atoi(res.Header["Retry-After"][0]); err != nil || s < 3000 || s > 3600 {
		t.Fatalf("RTSP Retry-After %v", res.Header["Retry-After"])
	}
	if len(e.users.used()) != checked {
		t.Fatal("credentials checked while throttled")
	}
	hres := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if hres.StatusCode != http.StatusTooManyRequests || hres.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP after 3 failures: %d %v", hres.StatusCode, hres.Header)
	}
	if res := e.describe("kid", "kid", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("another user behind the same address: %d", res.StatusCode)
	}
}
