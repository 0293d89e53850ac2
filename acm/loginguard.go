package acm

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the failed-login limit (Manager.LoginFailures,
// Manager.LoginFailureRefill).
const (
	DefaultLoginFailures      = 10
	DefaultLoginFailureRefill = 30 * time.Second
)

// loginGuardMax is the number of (client IP, user) pairs, and of client
// addresses, the guard remembers. When a table is full, the entries whose
// budget is whole again are forgotten (a scan at most once a second);
// if none are, a random entry is (most of a full table is a flood's).
const loginGuardMax = 100_000

// addrFactor scales the per-pair budget to the per-address one: an
// address may fail addrFactor times more often, over every user name.
const addrFactor = 10

// loginGuard limits failed logins per client IP and user name, and per
// client IP over all user names: each key has a token bucket of failures
// (golang.org/x/time/rate), burst failures refilled one per refill for a
// pair, addrFactor times both for an address. While a bucket is empty
// the requests under its key are refused before the credentials are
// checked, so guessing a password costs the guesser time and the BOSS no
// bcrypt. Only failures spend, and checks in flight count against the
// budget until they end: a check may start while the tokens left exceed
// the checks in flight; beyond that it waits for one of them to end
// (a correct one gives its place back, a wrong one spends it), so any
// number of correct logins at once pass (a household's boxes reconnecting
// together wait about one check) while guesses sent at once get no more
// checks than the budget. The pair's limit is the tight one: a
// household's or a hotel's set-top boxes share one NAT address, and one
// box with a wrong password must not lock the others out. The address's
// limit stops one address from spraying guesses over many user names
// (100 at once, then one every 3 s with the defaults). Safe for
// concurrent use.
type loginGuard struct {
	burst  int
	refill time.Duration

	mu      sync.Mutex
	pairs   map[string]*guardKey
	addrs   map[string]*guardKey
	pruned  time.Time     // last scan of the full tables
	changed chan struct{} // closed (and replaced) when a check ends
}

// guardKey is one pair's or address's bucket and its checks in flight.
type guardKey struct {
	l        *rate.Limiter
	inflight int
}

// newLoginGuard returns a guard allowing burst failures per pair, one
// more every refill; nil (no limit) when burst < 0.
func newLoginGuard(burst int, refill time.Duration) *loginGuard {
	if burst < 0 {
		return nil
	}
	return &loginGuard{burst: max(burst, 1), refill: refill, pairs: map[string]*guardKey{}, addrs: map[string]*guardKey{},
		changed: make(chan struct{})}
}

// take lets the client at ip check user's credentials at now: ok false,
// and when it may try again, while the pair's or the address's bucket
// holds less than one failure and no check under them is in flight;
// while the tokens left are taken by checks in flight it waits for one
// of them to end (or ctx: ok false, wait 0). On ok it returns done, to
// call once with the check's outcome and its time: a failure is charged
// to both buckets. IPv6 clients are keyed by their /64 (one subscriber's
// prefix).
func (g *loginGuard) take(ctx context.Context, ip, user string, now time.Time) (ok bool, wait time.Duration, done func(failed bool, at time.Time)) {
	if g == nil {
		return true, 0, func(bool, time.Time) {}
	}
	addr := addrKey(ip)
	pair := addr + "\x00" + user
	for {
		g.mu.Lock()
		if (len(g.addrs) >= loginGuardMax || len(g.pairs) >= loginGuardMax) && (now.Sub(g.pruned) >= time.Second || now.Before(g.pruned)) {
			g.pruned = now
			g.pruneLocked(now)
		}
		a := g.keyLocked(g.addrs, addr, addrFactor*g.burst, g.refill/addrFactor)
		p := g.keyLocked(g.pairs, pair, g.burst, g.refill)
		ta, tp := a.l.TokensAt(now), p.l.TokensAt(now)
		switch {
		case ta-float64(a.inflight) >= 1 && tp-float64(p.inflight) >= 1:
			a.inflight++
			p.inflight++
			g.mu.Unlock()
			var once sync.Once
			return true, 0, func(failed bool, at time.Time) {
				once.Do(func() { g.end(a, p, failed, at) })
			}
		case (ta < 1 && a.inflight == 0) || (tp < 1 && p.inflight == 0):
			// Spent by failures: refused until the bucket refills.
			wait = max(refillWait(ta, g.refill/addrFactor), refillWait(tp, g.refill))
			g.mu.Unlock()
			return false, wait, nil
		}
		ch := g.changed // the budget is held by checks in flight: wait for one
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false, 0, nil
		}
	}
}

// end ends a check counted on a and p: a failure at time at is charged
// (into debt if need be), and the waiting checks are woken.
func (g *loginGuard) end(a, p *guardKey, failed bool, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a.inflight--
	p.inflight--
	if failed {
		a.l.ReserveN(at, 1)
		p.l.ReserveN(at, 1)
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

// refillWait returns how long a bucket holding tokens waits to hold one
// again, refilling one every refill.
func refillWait(tokens float64, refill time.Duration) time.Duration {
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(refill))
}

// addrKey is the guard's key of a client address: the address, or an
// IPv6 address's /64.
func addrKey(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() && !a.Is4In6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip
}

// keyLocked returns key's entry in m, created with burst failures and one
// more every refill when missing (mu held). When m is full (take scans
// the full tables for whole buckets at most once a second), a random
// entry without a check in flight makes the room, so a flood of keys
// neither grows the table nor switches the limit off (a key of the
// flood's is the likely one to go).
func (g *loginGuard) keyLocked(m map[string]*guardKey, key string, burst int, refill time.Duration) *guardKey {
	if k := m[key]; k != nil {
		return k
	}
	if len(m) >= loginGuardMax {
		for k, e := range m {
			if len(m) < loginGuardMax {
				break
			}
			if e.inflight == 0 {
				delete(m, k)
			}
		}
	}
	k := &guardKey{l: rate.NewLimiter(rate.Every(refill), burst)}
	m[key] = k
	return k
}

// pruneLocked forgets the keys whose budget is whole again and that have
// no check in flight (they are as if new).
func (g *loginGuard) pruneLocked(now time.Time) {
	for k, e := range g.pairs {
		if e.inflight == 0 && e.l.TokensAt(now) >= float64(g.burst) {
			delete(g.pairs, k)
		}
	}
	for k, e := range g.addrs {
		if e.inflight == 0 && e.l.TokensAt(now) >= float64(addrFactor*g.burst) {
			delete(g.addrs, k)
		}
	}
}
