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

// loginGuardMax is the number of (client IP, user) pairs the guard
// remembers; past it, pairs whose budget is whole again are forgotten.
const loginGuardMax = 100_000

// loginGuard limits failed logins per client IP and user name: each pair
// has a token bucket of failures (golang.org/x/time/rate) of burst
// failures, refilled one per refill. While a pair's bucket is empty its
// requests are refused before the credentials are checked, so guessing a
// password costs the guesser time and the BOSS no bcrypt. Keyed by the
// pair rather than the IP alone: a household's or a hotel's set-top
// boxes share one NAT address, and one box with a wrong password must not
// lock the others out. Safe for concurrent use.
type loginGuard struct {
	burst  int
	refill time.Duration

	mu    sync.Mutex
	pairs map[string]*rate.Limiter
}

// newLoginGuard returns a guard allowing burst failures per pair, one
// more every refill; nil (no limit) when burst < 0.
func newLoginGuard(burst int, refill time.Duration) *loginGuard {
	if burst < 0 {
		return nil
	}
	return &loginGuard{burst: burst, refill: refill, pairs: map[string]*rate.Limiter{}}
}

// take books one failed login of the client at ip for user at now, before
// the credentials are checked, so that concurrent guesses cannot all pass
// a check made before any of them failed. It returns ok false, and when
// the pair may try again, when the pair has no failure left; otherwise a
// refund to call when the login succeeds. IPv6 clients are keyed by
// their /64 (one subscriber's prefix).
func (g *loginGuard) take(ip, user string, now time.Time) (ok bool, wait time.Duration, refund func()) {
	if g == nil {
		return true, 0, func() {}
	}
	key := pairKey(ip, user)
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.pairs[key]
	if l == nil {
		if len(g.pairs) >= loginGuardMax && !g.pruneLocked(now) {
			return true, 0, func() {} // a flood of distinct pairs: the known ones stay limited
		}
		l = rate.NewLimiter(rate.Every(g.refill), g.burst)
		g.pairs[key] = l
	}
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d, nil
	}
	return true, 0, func() {
		g.mu.Lock()
		r.CancelAt(now)
		g.mu.Unlock()
	}
}

// pairKey is the guard's key of a client address and user name.
func pairKey(ip, user string) string {
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() && !a.Is4In6() {
		if p, err := a.Prefix(64); err == nil {
			ip = p.String()
		}
	}
	return ip + "\x00" + user
}

// pruneLocked forgets the pairs whose budget is whole again (they are as
// if new) and reports whether that made room.
func (g *loginGuard) pruneLocked(now time.Time) bool {
	for k, l := range g.pairs {
		if l.TokensAt(now) >= float64(g.burst) {
			delete(g.pairs, k)
		}
	}
	return len(g.pairs) < loginGuardMax
}
