package acm

import (
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
// bcrypt. Only failures spend: any number of correct logins at once pass
// (a household's boxes reconnecting together). Guesses sent together
// all pass the check made before any of them failed, and each failure is
// then charged in full: the bucket goes into debt, and the key waits
// until it has refilled past it. The pair's limit is the tight one: a
// household's or a hotel's set-top boxes share one NAT address, and one
// box with a wrong password must not lock the others out. The address's
// limit stops one address from spraying guesses over many user names
// (100 at once, then one every 3 s with the defaults). Safe for
// concurrent use.
type loginGuard struct {
	burst  int
	refill time.Duration

	mu     sync.Mutex
	pairs  map[string]*rate.Limiter
	addrs  map[string]*rate.Limiter
	pruned time.Time // last scan of the full tables
}

// newLoginGuard returns a guard allowing burst failures per pair, one
// more every refill; nil (no limit) when burst < 0.
func newLoginGuard(burst int, refill time.Duration) *loginGuard {
	if burst < 0 {
		return nil
	}
	return &loginGuard{burst: burst, refill: refill, pairs: map[string]*rate.Limiter{}, addrs: map[string]*rate.Limiter{}}
}

// take checks, before the credentials are, that the client at ip may try
// user's credentials at now: ok false, and when it may try again, while
// the pair's or the address's bucket holds less than one failure. On ok
// it returns fail, to call when the credentials turn out wrong: it
// charges the failure to both buckets (into debt if need be). IPv6
// clients are keyed by their /64 (one subscriber's prefix).
func (g *loginGuard) take(ip, user string, now time.Time) (ok bool, wait time.Duration, fail func()) {
	if g == nil {
		return true, 0, func() {}
	}
	addr := addrKey(ip)
	pair := addr + "\x00" + user
	g.mu.Lock()
	defer g.mu.Unlock()
	wait = max(g.waitLocked(g.addrs[addr], now, g.refill/addrFactor), g.waitLocked(g.pairs[pair], now, g.refill))
	if wait > 0 {
		return false, wait, nil
	}
	return true, 0, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if (len(g.addrs) >= loginGuardMax || len(g.pairs) >= loginGuardMax) && (now.Sub(g.pruned) >= time.Second || now.Before(g.pruned)) {
			g.pruned = now
			g.pruneLocked(now)
		}
		g.limiterLocked(g.addrs, addr, addrFactor*g.burst, g.refill/addrFactor).ReserveN(now, 1)
		g.limiterLocked(g.pairs, pair, g.burst, g.refill).ReserveN(now, 1)
	}
}

// waitLocked returns how long until l holds one failure again (0: now; a
// missing bucket is whole), l refilling one every refill (mu held).
func (g *loginGuard) waitLocked(l *rate.Limiter, now time.Time, refill time.Duration) time.Duration {
	if l == nil {
		return 0
	}
	if tokens := l.TokensAt(now); tokens < 1 {
		return time.Duration((1 - tokens) * float64(refill))
	}
	return 0
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

// limiterLocked returns key's bucket in m, created with burst failures
// and one more every refill when missing (mu held). When m is full (take
// scans the full tables for whole buckets at most once a second), a
// random entry makes the room, so a flood of keys neither grows the
// table nor switches the limit off (a key of the flood's is the likely
// one to go).
func (g *loginGuard) limiterLocked(m map[string]*rate.Limiter, key string, burst int, refill time.Duration) *rate.Limiter {
	if l := m[key]; l != nil {
		return l
	}
	if len(m) >= loginGuardMax {
		for k := range m {
			if len(m) < loginGuardMax {
				break
			}
			delete(m, k)
		}
	}
	l := rate.NewLimiter(rate.Every(refill), burst)
	m[key] = l
	return l
}

// pruneLocked forgets the keys whose budget is whole again (they are as
// if new).
func (g *loginGuard) pruneLocked(now time.Time) {
	for k, l := range g.pairs {
		if l.TokensAt(now) >= float64(g.burst) {
			delete(g.pairs, k)
		}
	}
	for k, l := range g.addrs {
		if l.TokensAt(now) >= float64(addrFactor*g.burst) {
			delete(g.addrs, k)
		}
	}
}
