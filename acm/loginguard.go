package acm

import (
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

// blocked reports whether the pair has no failure left at now, and when
// it will have one again.
func (g *loginGuard) blocked(ip, user string, now time.Time) (bool, time.Duration) {
	if g == nil {
		return false, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.pairs[ip+"\x00"+user]
	if l == nil || l.TokensAt(now) >= 1 {
		return false, 0
	}
	r := l.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return true, wait
}

// failed books one failed login of the pair at now.
func (g *loginGuard) failed(ip, user string, now time.Time) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	key := ip + "\x00" + user
	l := g.pairs[key]
	if l == nil {
		if len(g.pairs) >= loginGuardMax {
			g.pruneLocked(now)
		}
		l = rate.NewLimiter(rate.Every(g.refill), g.burst)
		g.pairs[key] = l
	}
	l.AllowN(now, 1)
}

// pruneLocked forgets the pairs whose budget is whole again (they are as
// if new); if none is, the whole table (a flood of distinct pairs).
func (g *loginGuard) pruneLocked(now time.Time) {
	for k, l := range g.pairs {
		if l.TokensAt(now) >= float64(g.burst) {
			delete(g.pairs, k)
		}
	}
	if len(g.pairs) >= loginGuardMax {
		g.pairs = map[string]*rate.Limiter{}
	}
}
