package acm

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

func TestLoginGuardBudget(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := 0; i < 2; i++ {
		if ok, _, _ := g.take("10.0.0.1", "alice", t0); !ok {
			t.Fatalf("refused after %d failures, budget 2", i)
		}
	}
	ok, wait, _ := g.take("10.0.0.1", "alice", t0)
	if ok || wait < 9*time.Second || wait > 10*time.Second {
		t.Fatalf("after 2 failures: ok %v, wait %v (want about 10s)", ok, wait)
	}
	// Another user behind the same address, and the same user elsewhere,
	// are not affected.
	if ok, _, _ := g.take("10.0.0.1", "bob", t0); !ok {
		t.Fatal("another user on the same IP refused")
	}
	if ok, _, _ := g.take("10.0.0.2", "alice", t0); !ok {
		t.Fatal("the same user on another IP refused")
	}
	// A refused attempt does not spend: one is back after one refill, and
	// a success gives its attempt back.
	t1 := t0.Add(10 * time.Second)
	ok, _, refund := g.take("10.0.0.1", "alice", t1)
	if !ok {
		t.Fatal("still refused after a refill")
	}
	refund()
	if ok, _, _ := g.take("10.0.0.1", "alice", t1); !ok {
		t.Fatal("a refunded attempt was spent")
	}
	if ok, _, _ := g.take("10.0.0.1", "alice", t1); ok {
		t.Fatal("not refused after spending the refill")
	}
	// IPv6 clients are keyed by their /64.
	g.take("2001:db8:1:2::10", "carol", t0)
	g.take("2001:db8:1:2::11", "carol", t0)
	if ok, _, _ := g.take("2001:db8:1:2:ffff::1", "carol", t0); ok {
		t.Fatal("another address of the same /64 not refused")
	}
	if ok, _, _ := g.take("2001:db8:1:3::10", "carol", t0); !ok {
		t.Fatal("another /64 refused")
	}
	if newLoginGuard(-1, time.Second) != nil {
		t.Fatal("a negative budget does not disable the guard")
	}
	var none *loginGuard
	if ok, _, refund := none.take("10.0.0.1", "alice", t0); !ok || refund == nil {
		t.Fatal("no guard refuses")
	}
}

// Concurrent wrong guesses each spend an attempt before the credentials
// are checked: no more than the budget reach the check.
func TestLoginGuardConcurrent(t *testing.T) {
	g := newLoginGuard(3, time.Hour)
	t0 := time.Unix(1_000_000, 0)
	var passed atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _, _ := g.take("10.0.0.1", "alice", t0); ok {
				passed.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := passed.Load(); got != 3 {
		t.Fatalf("%d guesses reached the check, budget 3", got)
	}
}

func TestLoginGuardPrunes(t *testing.T) {
	g := newLoginGuard(1, time.Second)
	t0 := time.Unix(1_000_000, 0)
	// A flood of pairs from many addresses fills the tables with spent
	// buckets.
	for i := 0; i < loginGuardMax; i++ {
		g.take("10.1."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250), "junk"+strconv.Itoa(i), t0)
	}
	g.take("10.0.0.9", "victim", t0) // the victim's one failure
	// The tables stay bounded, and the limit stays on: the victim's next
	// guesses are refused, whatever the flood evicted.
	refused := 0
	for range 200 {
		if ok, _, _ := g.take("10.0.0.9", "victim", t0); !ok {
			refused++
		}
	}
	if len(g.pairs) > loginGuardMax || len(g.addrs) > loginGuardMax {
		t.Fatalf("tables grew past their bound: %d pairs, %d addresses", len(g.pairs), len(g.addrs))
	}
	if refused < 190 {
		t.Fatalf("only %d of 200 guesses refused in a flood", refused)
	}
	// Once their budgets are whole again they are forgotten.
	g.take("10.0.0.9", "late", t0.Add(time.Minute))
	if len(g.pairs) != 1 || len(g.addrs) != 1 {
		t.Fatalf("%d pairs and %d addresses kept, want the new one", len(g.pairs), len(g.addrs))
	}
	if ok, _, _ := g.take("10.0.0.9", "late", t0.Add(time.Minute)); ok {
		t.Fatal("the new pair's failure was lost")
	}
}

// One address spraying guesses over many user names is limited too: ten
// times the pair's budget, refilled ten times as fast.
func TestLoginGuardPerAddress(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := range 20 {
		if ok, _, _ := g.take("10.0.0.1", "user"+strconv.Itoa(i), t0); !ok {
			t.Fatalf("refused after %d failures over many names, budget 20", i)
		}
	}
	ok, wait, _ := g.take("10.0.0.1", "fresh", t0)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("the address's 21st failure: ok %v, wait %v (want about 1s)", ok, wait)
	}
	if ok, _, _ := g.take("10.0.0.2", "fresh", t0); !ok {
		t.Fatal("another address refused")
	}
	// A refused attempt spends neither budget: after one address refill
	// the fresh name has its own two.
	if ok, _, _ := g.take("10.0.0.1", "fresh", t0.Add(time.Second)); !ok {
		t.Fatal("still refused after the address's refill")
	}
	// IPv6: one /64 is one address.
	for i := range 20 {
		g.take("2001:db8::"+strconv.Itoa(i+1), "u"+strconv.Itoa(i), t0)
	}
	if ok, _, _ := g.take("2001:db8::ffff", "other", t0); ok {
		t.Fatal("a /64 spraying from many addresses not refused")
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
