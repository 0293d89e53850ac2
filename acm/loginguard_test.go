package acm

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"vodcluster/acm/boss"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// guess tries user's credentials from ip at now through g, wrong ones
// when wrong: it reports whether the guard let the attempt through.
func guess(g *loginGuard, ip, user string, now time.Time, wrong bool) bool {
	ok, _, done := g.take(context.Background(), ip, user, credKey{}, true, now)
	if ok {
		done(outcomeOf(wrong), now)
	}
	return ok
}

// outcomeOf is the outcome of a check of wrong or right credentials.
func outcomeOf(wrong bool) checkOutcome {
	if wrong {
		return checkFailed
	}
	return checkPassed
}

func TestLoginGuardBudget(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := 0; i < 2; i++ {
		if !guess(g, "10.0.0.1", "alice", t0, true) {
			t.Fatalf("refused after %d failures, budget 2", i)
		}
	}
	ok, wait, _ := g.take(context.Background(), "10.0.0.1", "alice", credKey{}, true, t0)
	if ok || wait < 9*time.Second || wait > 10*time.Second {
		t.Fatalf("after 2 failures: ok %v, wait %v (want about 10s)", ok, wait)
	}
	// Another user behind the same address, and the same user elsewhere,
	// are not affected.
	if !guess(g, "10.0.0.1", "bob", t0, false) || !guess(g, "10.0.0.2", "alice", t0, false) {
		t.Fatal("another user on the same IP, or the same user on another IP, refused")
	}
	// One failure is back after one refill; a correct login spends
	// nothing.
	t1 := t0.Add(10 * time.Second)
	for range 5 {
		if !guess(g, "10.0.0.1", "alice", t1, false) {
			t.Fatal("a correct login refused after a refill, or spent")
		}
	}
	if !guess(g, "10.0.0.1", "alice", t1, true) || guess(g, "10.0.0.1", "alice", t1, false) {
		t.Fatal("the refill's one failure not allowed, or not spent")
	}
	// IPv6 clients are keyed by their /64.
	guess(g, "2001:db8:1:2::10", "carol", t0, true)
	guess(g, "2001:db8:1:2::11", "carol", t0, true)
	if guess(g, "2001:db8:1:2:ffff::1", "carol", t0, false) {
		t.Fatal("another address of the same /64 not refused")
	}
	if !guess(g, "2001:db8:1:3::10", "carol", t0, false) {
		t.Fatal("another /64 refused")
	}
	// An IPv4-mapped address is its IPv4 address (a dual-stack listener
	// sees it so).
	guess(g, "::ffff:10.0.0.7", "dave", t0, true)
	guess(g, "10.0.0.7", "dave", t0, true)
	if guess(g, "::ffff:10.0.0.7", "dave", t0, false) {
		t.Fatal("an IPv4-mapped address keyed apart from its IPv4 address")
	}
	if newLoginGuard(-1, time.Second) != nil {
		t.Fatal("a negative budget does not disable the guard")
	}
	var none *loginGuard
	if ok, _, done := none.take(context.Background(), "10.0.0.1", "alice", credKey{}, true, t0); !ok || done == nil {
		t.Fatal("no guard refuses")
	}
}

// Correct logins at once are never refused: beyond the budget they wait
// for the checks in flight, which give their places back. Wrong guesses
// sent at once get no more checks than the budget: the others wait, then
// are refused once the failures are charged.
func TestLoginGuardConcurrent(t *testing.T) {
	g := newLoginGuard(3, time.Minute)
	t0 := time.Unix(1_000_000, 0)
	ctx := context.Background()
	run := func(user string, wrong bool) (passed, checked int32) {
		var p, c atomic.Int32
		var inflight, peak atomic.Int32
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, _, done := g.take(ctx, "10.0.0.1", user, credKey{}, true, t0)
				if !ok {
					return
				}
				c.Add(1)
				if n := inflight.Add(1); n > peak.Load() {
					peak.Store(n)
				}
				time.Sleep(time.Millisecond) // the credential check
				inflight.Add(-1)
				done(outcomeOf(wrong), t0)
				if !wrong {
					p.Add(1)
				}
			}()
		}
		wg.Wait()
		if peak.Load() > 3 {
			t.Errorf("%s: %d checks in flight at once, budget 3", user, peak.Load())
		}
		return p.Load(), c.Load()
	}
	if passed, _ := run("alice", false); passed != 32 {
		t.Fatalf("%d of 32 correct logins at once let through", passed)
	}
	if _, checked := run("bob", true); checked != 3 {
		t.Fatalf("%d of 32 wrong guesses at once reached the check, budget 3", checked)
	}
	// A waiting check gives up with its client.
	g2 := newLoginGuard(1, time.Minute)
	ok, _, done := g2.take(ctx, "10.0.0.2", "carol", credKey{}, true, t0)
	if !ok {
		t.Fatal("first check refused")
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if ok, wait, _ := g2.take(cctx, "10.0.0.2", "carol", credKey{}, true, t0); ok || wait != 0 || cctx.Err() == nil {
		t.Fatalf("a check waiting past its context: ok %v, wait %v", ok, wait)
	}
	done(checkPassed, t0)
}

func TestLoginGuardPrunes(t *testing.T) {
	g := newLoginGuard(1, time.Second)
	t0 := time.Unix(1_000_000, 0)
	// A flood of failures from many addresses and names fills the tables
	// with spent buckets.
	for i := 0; i < bucketTableMax; i++ {
		guess(g, "10.1."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250), "junk"+strconv.Itoa(i), t0, true)
	}
	guess(g, "10.0.0.9", "victim", t0, true) // the victim's one failure
	// The tables stay bounded, and the limit stays on: the victim's next
	// guesses are refused, whatever the flood evicted.
	refused := 0
	for range 200 {
		if !guess(g, "10.0.0.9", "victim", t0, true) {
			refused++
		}
	}
	if len(g.pairs.keys) > bucketTableMax || len(g.addrs.keys) > bucketTableMax {
		t.Fatalf("tables grew past their bound: %d pairs, %d addresses", len(g.pairs.keys), len(g.addrs.keys))
	}
	if refused < 190 {
		t.Fatalf("only %d of 200 guesses refused in a flood", refused)
	}
	// Once their budgets are whole again they are forgotten.
	guess(g, "10.0.0.9", "late", t0.Add(time.Hour), true)
	if len(g.pairs.keys) != 1 || len(g.addrs.keys) != 1 {
		t.Fatalf("%d pairs and %d addresses kept, want the new one", len(g.pairs.keys), len(g.addrs.keys))
	}
	if guess(g, "10.0.0.9", "late", t0.Add(time.Hour), false) {
		t.Fatal("the new pair's failure was lost")
	}
}

// One address spraying guesses over many user names is limited too: ten
// times the pair's budget, refilled ten times as fast.
func TestLoginGuardPerAddress(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := range 20 {
		if !guess(g, "10.0.0.1", "user"+strconv.Itoa(i), t0, true) {
			t.Fatalf("refused after %d failures over many names, budget 20", i)
		}
	}
	ok, wait, _ := g.take(context.Background(), "10.0.0.1", "fresh", credKey{}, true, t0)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("the address's 21st attempt: ok %v, wait %v (want about 1s)", ok, wait)
	}
	if !guess(g, "10.0.0.2", "fresh", t0, false) {
		t.Fatal("another address refused")
	}
	if !guess(g, "10.0.0.1", "fresh", t0.Add(time.Second), false) {
		t.Fatal("still refused after the address's refill")
	}
	// IPv6: one /64 is one address.
	for i := range 20 {
		guess(g, "2001:db8::"+strconv.Itoa(i+1), "u"+strconv.Itoa(i), t0, true)
	}
	if guess(g, "2001:db8::ffff", "other", t0, false) {
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
		// three guesses (the same wrong password sent again is no new one)
		if res := e.describe("demo", "wrong"+strconv.Itoa(i), "t1"); res.StatusCode != base.StatusUnauthorized {
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

// Many correct logins of one subscriber from one address at once (a
// household's boxes reconnecting together) are never refused as failed
// logins: only failures spend.
func TestCorrectLoginsAtOnceNotThrottled(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.LoginFailures, m.MaxSessionsPerUser, m.RequestsPerUser = 3, -1, -1
		m.BOSS = slowBOSS{m.BOSS} // every check in flight at once, as bcrypt under load
	})
	e.startNode("n1", nodeOpts{egress: 100 * titleBps})
	const n = 30
	codes := make(chan int, n)
	for i := range n {
		go func() {
			req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t"+strconv.Itoa(i%3+1)+".ts", nil)
			req.SetBasicAuth("demo", "demo")
			res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true},
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				codes <- 0
				return
			}
			res.Body.Close()
			codes <- res.StatusCode
		}()
	}
	for range n {
		if c := <-codes; c != http.StatusFound {
			t.Errorf("a correct login among %d at once: %d, want 302", n, c)
		}
	}
}

// slowBOSS takes 200 ms per credential check (bcrypt's cost under load).
type slowBOSS struct{ boss.BOSS }

func (b slowBOSS) Authenticate(ctx context.Context, c boss.Credentials) error {
	time.Sleep(200 * time.Millisecond)
	return b.BOSS.Authenticate(ctx, c)
}

// A device spraying guesses over many user names from a shared address
// (a household's, a hotel's, a carrier's NAT) spends the address's budget,
// but the subscribers who logged in correctly from there before are not
// locked out by it (they were: 100 wrong guesses, then one every 3 s,
// kept every password login behind the address refused); a user name
// new to the address still is, and a known pair's own limit still holds.
func TestLoginGuardKnownPairsPassASprayedAddress(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	if !guess(g, "10.0.0.1", "alice", t0, false) {
		t.Fatal("first login refused")
	}
	for i := range 20 {
		guess(g, "10.0.0.1", "spray"+strconv.Itoa(i), t0, true)
	}
	if ok, _, _ := g.take(context.Background(), "10.0.0.1", "fresh", credKey{}, true, t0); ok {
		t.Fatal("a name new to the sprayed address let through")
	}
	later := t0.Add(24 * time.Hour)
	for i := range 20 {
		guess(g, "10.0.0.1", "spray-again"+strconv.Itoa(i), later, true)
	}
	if !guess(g, "10.0.0.1", "alice", later, false) {
		t.Fatal("a subscriber who logged in from the address before is locked out by the spray")
	}
	// alice's own limit: two failures, then refused
	guess(g, "10.0.0.1", "alice", later, true)
	guess(g, "10.0.0.1", "alice", later, true)
	if ok, _, _ := g.take(context.Background(), "10.0.0.1", "alice", credKey{}, true, later); ok {
		t.Fatal("a known pair's own failures not limited")
	}
	// known for knownPairTTL only
	if !guess(g, "10.0.0.1", "alice", t0.Add(knownPairTTL+time.Hour), false) {
		t.Fatal("refused a week on, the address's and alice's budgets refilled")
	}
	g.known["10.0.0.1\x00old"] = t0
	for i := range 20 {
		guess(g, "10.0.0.1", "s"+strconv.Itoa(i), t0.Add(knownPairTTL+2*time.Hour), true)
	}
	if ok, _, _ := g.take(context.Background(), "10.0.0.1", "old", credKey{}, true, t0.Add(knownPairTTL+2*time.Hour)); ok {
		t.Fatal("a pair known more than knownPairTTL ago still passes the spent address")
	}
}

// The known pairs are bounded: past bucketTableMax a correct login makes
// room by forgetting another.
func TestLoginGuardKnownPairsBounded(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := range bucketTableMax + 50 {
		g.mu.Lock()
		g.noteKnownLocked("10.0.0.1\x00u"+strconv.Itoa(i), t0.Add(time.Duration(i)*time.Millisecond))
		g.mu.Unlock()
	}
	if n := len(g.known); n > bucketTableMax {
		t.Fatalf("%d known pairs, at most %d", n, bucketTableMax)
	}
}

// At most maxAddrChecks checks of names not known at an address run at
// once from it, the next waiting for one to end (an address's 100 guesses
// sent at once queued 100 bcrypt comparisons ahead of every subscriber);
// a name known there does not wait for them.
func TestLoginGuardChecksPerAddress(t *testing.T) {
	g := newLoginGuard(10, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	guess(g, "10.0.0.1", "alice", t0, false) // known at the address
	var dones []func(checkOutcome, time.Time)
	for i := range maxAddrChecks {
		ok, _, done := g.take(context.Background(), "10.0.0.1", "guess"+strconv.Itoa(i), credKey{}, true, t0)
		if !ok {
			t.Fatalf("check %d of the address refused", i)
		}
		dones = append(dones, done)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, wait, _ := g.take(gone, "10.0.0.1", "another", credKey{}, true, t0); ok || wait != 0 {
		t.Fatalf("a check beyond %d at once from the address: ok %v, wait %v; want it to wait (until its context ended)", maxAddrChecks, ok, wait)
	}
	if !guess(g, "10.0.0.1", "alice", t0, false) {
		t.Fatal("a name known at the address waited for the guesses' checks")
	}
	if !guess(g, "10.0.0.2", "bob", t0, false) {
		t.Fatal("another address waited")
	}
	dones[0](checkFailed, t0)
	if !guess(g, "10.0.0.1", "another", t0, true) {
		t.Fatal("a check still refused once one of the address's ended")
	}
	for _, d := range dones[1:] {
		d(checkFailed, t0)
	}
}

// A check that ended neither right nor wrong (the client left while it
// waited for its bcrypt, the subscriber database failed) makes its pair
// known no more than it charges a failure: 40 guesses of made-up names,
// each dropped after 5 ms, made 39 of them known, and their address then
// had 399 guesses checked for its budget of 100.
func TestLoginGuardUndecidedChecksMakeNoPairKnown(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	for i := range 20 {
		ok, _, done := g.take(context.Background(), "10.0.0.1", "made-up"+strconv.Itoa(i), credKey{}, true, t0)
		if !ok {
			t.Fatalf("check %d refused", i)
		}
		done(checkUndecided, t0)
	}
	if g.isKnown("10.0.0.1", "made-up0", t0) || len(g.known) != 0 {
		t.Fatalf("%d pairs known without a correct login", len(g.known))
	}
	for i := range 20 {
		guess(g, "10.0.0.1", "spray"+strconv.Itoa(i), t0, true)
	}
	if ok, _, _ := g.take(context.Background(), "10.0.0.1", "made-up1", credKey{}, true, t0); ok {
		t.Fatal("a name whose check was abandoned passes the spent address")
	}
}

// Digest checks (an MD5, no bcrypt) are not held by the cap of costly
// checks per address: after a restart a carrier NAT address's boxes,
// Digest over RTSP, log in together, none known yet.
func TestLoginGuardDigestChecksNotCapped(t *testing.T) {
	g := newLoginGuard(10, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	var dones []func(checkOutcome, time.Time)
	take := func(ctx context.Context, user string, basic bool) bool {
		ok, _, done := g.take(ctx, "10.0.0.1", user, credKey{}, basic, t0)
		if ok {
			dones = append(dones, done)
		}
		return ok
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range maxAddrChecks {
		if !take(context.Background(), "basic"+strconv.Itoa(i), true) {
			t.Fatalf("Basic check %d refused", i)
		}
	}
	if take(gone, "one-more-basic", true) {
		t.Fatal("a Basic check beyond the cap let through")
	}
	for i := range 2 * maxAddrChecks {
		if !take(gone, "digest"+strconv.Itoa(i), false) {
			t.Fatalf("Digest check %d held by the Basic checks' cap", i)
		}
	}
	for _, d := range dones {
		d(checkPassed, t0)
	}
}

// Guesses at one account spread over many addresses (one a /64, each
// within its own pair's and address's budget) are limited for that user
// name: ten times the pair's budget over every address, refilled ten
// times as fast; an address where the subscriber logged in before is not
// held by it, and other user names are not affected.
func TestLoginGuardPerUserOverAddresses(t *testing.T) {
	g := newLoginGuard(2, 10*time.Second)
	t0 := time.Unix(1_000_000, 0)
	if !guess(g, "192.0.2.7", "alice", t0, false) {
		t.Fatal("alice's own box refused")
	}
	for i := range 20 {
		if !guess(g, "2001:db8:0:"+strconv.FormatInt(int64(i+1), 16)+"::1", "alice", t0, true) {
			t.Fatalf("refused after %d failures for alice over many addresses, budget 20", i)
		}
	}
	ok, wait, _ := g.take(context.Background(), "2001:db8:0:ff::1", "alice", credKey{}, true, t0)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("alice's 21st failure from a 21st address: ok %v, wait %v (want about 1s)", ok, wait)
	}
	if !guess(g, "192.0.2.7", "alice", t0, false) {
		t.Fatal("alice's own box, known at its address, refused")
	}
	if !guess(g, "2001:db8:0:ff::1", "bob", t0, false) {
		t.Fatal("another user name refused")
	}
	if !guess(g, "2001:db8:0:fe::1", "alice", t0.Add(time.Second), false) {
		t.Fatal("alice from a new address still refused after the refill")
	}
}

// LoginFailuresPerUser sets the per-user budget (n failures over every
// address) or, at -1, removes it: guesses at one name from many
// addresses then meet only their addresses' and pairs' limits.
func TestLoginGuardUserBudget(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	spend := func(g *loginGuard, n int) int {
		for i := range n {
			if !guess(g, "10.9.0."+strconv.Itoa(i+1), "alice", t0, true) {
				return i
			}
		}
		return n
	}
	if got := spend(newLoginGuard(2, 10*time.Second).withUserBudget(5), 30); got != 5 {
		t.Fatalf("a budget of 5: %d failures let through", got)
	}
	if got := spend(newLoginGuard(2, 10*time.Second).withUserBudget(0), 30); got != 20 {
		t.Fatalf("the default budget (ten times 2): %d failures let through", got)
	}
	g := newLoginGuard(2, 10*time.Second).withUserBudget(-1)
	if got := spend(g, 30); got != 30 {
		t.Fatalf("no per-user budget: %d of 30 failures let through", got)
	}
	if by := g.refusedBy("10.9.1.1", "alice", t0); by != "" {
		t.Fatalf("no per-user budget, a new address refused by %q", by)
	}
	var none *loginGuard
	if none.withUserBudget(3) != nil {
		t.Fatal("a nil guard given a budget")
	}
}
