package acm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"vodcluster/proto/connlimit"
)

// Defaults of the failed-login limit (Manager.LoginFailures,
// Manager.LoginFailureRefill).
const (
	DefaultLoginFailures      = 10
	DefaultLoginFailureRefill = 30 * time.Second
)

// addrFactor scales the per-pair budget to the per-address and per-user
// ones: an address may fail addrFactor times more often, over every user
// name, and a user name as often, over every address.
const addrFactor = 10

// loginGuard limits failed logins per client IP and user name, per
// client IP over all user names, and per user name over all client IPs:
// each key has a token bucket of failures (golang.org/x/time/rate), burst
// failures refilled one per refill for a pair, addrFactor times both for
// an address and for a user name. While a bucket is empty
// the requests under its key are refused before the credentials are
// checked, so guessing a password costs the guesser time and the BOSS no
// bcrypt. Only failures spend, and checks in flight count against the
// budget until they end: a check may start while the tokens left exceed
// the checks in flight; beyond that it waits for one of them to end
// (a correct one gives its place back, a wrong one spends it), so any
// number of correct logins at once pass (a household's boxes reconnecting
// together wait about one check) while guesses sent at once get no more
// checks than the budget, and no more than maxAddrChecks at once per
// address for names not known there. The pair's limit is the tight one: a
// household's or a hotel's set-top boxes share one NAT address, and one
// box with a wrong password must not lock the others out. The address's
// limit stops one address from spraying guesses over many user names
// (100 at once, then one every 3 s with the defaults), but a pair that
// logged in correctly within knownPairTTL is not held by it (its own
// limit still holds): a device spraying guesses from a household's,
// hotel's or carrier-grade NAT's address locked out every subscriber
// behind it, one guess every 3 s keeping them out. A user name has the
// address's budget over every address too (100 failures, then one every
// 3 s), which known pairs are not held by either: guesses at one account
// spread over many addresses (an IPv6 /48 holds 65,536 /64s, each with its
// own pair budget) stop there, while the subscriber's own boxes, known at
// their addresses, still log in. Each table holds at
// most bucketTableMax keys (bucketTable: a key with a check in flight is
// never forgotten), the known pairs as many. Safe for concurrent use.
type loginGuard struct {
	burst  int
	refill time.Duration

	mu    sync.Mutex
	pairs *bucketTable         // by client address and user name; inflight: checks in flight
	addrs *bucketTable         // by client address
	users *bucketTable         // by user name, over every address; nil: no such limit (withUserBudget)
	known map[string]time.Time // pairs (as pairs' keys) by their last correct login
	// knownDirty: a pair became known since the last snapshotKnown;
	// knownTouched: a known pair logged in again since it; knownSavedAt:
	// the last snapshotKnown's time (loginknown.go).
	knownDirty, knownTouched bool
	knownSavedAt             time.Time
	changed                  chan struct{} // closed (and replaced) when a check ends
}

// maxAddrChecks is how many costly credential checks (Basic: a bcrypt
// comparison; Digest's, an MD5, are not) of user names not known at an
// address (knownLocked) may run at once from it; the others wait for one
// of them to end. An address's budget of guesses (100) sent at once
// queued as many bcrypt comparisons (about 50 ms each, on as few slots
// as cores), and ten addresses held every subscriber's first login back
// for seconds.
const maxAddrChecks = 4

// knownPairTTL is how long a correct login keeps its pair (client
// address, user name) clear of its address's limit: a set-top box
// reconnects at least daily.
const knownPairTTL = 7 * 24 * time.Hour

// newLoginGuard returns a guard allowing burst failures per pair, one
// more every refill; nil (no limit) when burst < 0.
func newLoginGuard(burst int, refill time.Duration) *loginGuard {
	if burst < 0 {
		return nil
	}
	burst = max(burst, 1)
	return &loginGuard{burst: burst, refill: refill,
		pairs:   newBucketTable(burst, refill, bucketTableMax),
		addrs:   newBucketTable(addrFactor*burst, refill/addrFactor, bucketTableMax),
		users:   newBucketTable(addrFactor*burst, refill/addrFactor, bucketTableMax),
		known:   map[string]time.Time{},
		changed: make(chan struct{})}
}

// withUserBudget sets the budget of failed logins of one user name over
// every address but those it is known at: n failures, one more every
// refill/addrFactor; n == 0 leaves the default (addrFactor times the
// pair's), n < 0 sets none. It returns g (nil stays nil).
func (g *loginGuard) withUserBudget(n int) *loginGuard {
	switch {
	case g == nil || n == 0:
	case n < 0:
		g.users = nil
	default:
		g.users = newBucketTable(n, g.refill/addrFactor, bucketTableMax)
	}
	return g
}

// credKey identifies the credentials of a request: the first 128 bits
// of the SHA-256 of its Authorization header's value.
type credKey [16]byte

// credKeyOf returns the credKey of an Authorization header's value.
func credKeyOf(header string) credKey {
	sum := sha256.Sum256([]byte(header))
	return credKey(sum[:16])
}

// repeated reports whether cred are the credentials whose check last
// failed for user from ip, less than the pair's refill ago: the client
// resends what it was refused (GStreamer's rtspsrc sends a wrong
// password eight times before it gives up), which is no new guess. It
// is refused again without a check and without a charge, so that one
// mistyped password does not spend the budget of a household's boxes.
func (g *loginGuard) repeated(ip, user string, cred credKey, now time.Time) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pairs.get(addrKey(ip)+"\x00"+userKey(user), now)
	return !p.failedAt.IsZero() && p.failed == cred && now.Sub(p.failedAt) < g.refill && !now.Before(p.failedAt)
}

// take lets the client at ip check user's credentials at now: ok false,
// and when it may try again, while the pair's, the address's or the user
// name's bucket (the last two not for a known pair) holds less than one
// failure and no check under it is in flight;
// while the tokens left are taken by checks in flight it waits for one
// of them to end (or ctx: ok false, wait 0). On ok it returns done, to
// call once with the check's outcome and its time: a failure is charged
// to the three buckets and cred (the credentials checked) is remembered for
// repeated; a pass makes the pair known. costly: the check is a Basic
// one (bcrypt), counted against maxAddrChecks. IPv6 clients are keyed by their /64 (one subscriber's
// prefix).
func (g *loginGuard) take(ctx context.Context, ip, user string, cred credKey, costly bool, now time.Time) (ok bool, wait time.Duration, done func(outcome checkOutcome, at time.Time)) {
	if g == nil {
		return true, 0, func(checkOutcome, time.Time) {}
	}
	addr := addrKey(ip)
	pair := addr + "\x00" + userKey(user)
	for {
		g.mu.Lock()
		a := g.addrs.get(addr, now)
		p := g.pairs.get(pair, now)
		ta, tp := a.l.TokensAt(now), p.l.TokensAt(now)
		u, tu := &bucket{l: rate.NewLimiter(rate.Inf, 0)}, math.Inf(1) // no per-user limit: a bucket kept nowhere, never short
		if g.users != nil {
			u = g.users.get(userKey(user), now)
			tu = u.l.TokensAt(now)
		}
		known := g.knownLocked(pair, now)
		switch {
		case (known || (ta-float64(a.inflight) >= 1 && (!costly || a.costly < maxAddrChecks) && tu-float64(u.inflight) >= 1)) && tp-float64(p.inflight) >= 1:
			a.inflight++
			p.inflight++
			u.inflight++
			if costly {
				a.costly++
			}
			g.mu.Unlock()
			var once sync.Once
			return true, 0, func(outcome checkOutcome, at time.Time) {
				once.Do(func() { g.end(pair, a, p, u, cred, costly, outcome, at) })
			}
		case !known && ta < 1 && a.inflight == 0, !known && tu < 1 && u.inflight == 0, tp < 1 && p.inflight == 0:
			// Spent by failures: refused until the buckets refill.
			wait = refillWait(tp, g.refill)
			if !known {
				wait = max(wait, refillWait(ta, g.refill/addrFactor), refillWait(tu, g.refill/addrFactor))
			}
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

// refusedBy names, for the log, the limit that refuses user's logins
// from ip at now (take's refusal): "pair" (the user name from this
// address), "address" (this address over all user names) or "user" (the
// user name over all addresses but those it is known at); "" when none
// does now.
func (g *loginGuard) refusedBy(ip, user string, now time.Time) string {
	if g == nil {
		return ""
	}
	addr, uk := addrKey(ip), userKey(user)
	g.mu.Lock()
	defer g.mu.Unlock()
	known := g.knownLocked(addr+"\x00"+uk, now)
	switch {
	case g.pairs.get(addr+"\x00"+uk, now).l.TokensAt(now) < 1:
		return "pair"
	case !known && g.addrs.get(addr, now).l.TokensAt(now) < 1:
		return "address"
	case !known && g.users != nil && g.users.get(uk, now).l.TokensAt(now) < 1:
		return "user"
	}
	return ""
}

// checkOutcome is how a credential check under the guard ended.
type checkOutcome int

const (
	checkUndecided checkOutcome = iota // neither right nor wrong: the client left while it waited, the backend failed
	checkPassed                        // the credentials are right
	checkFailed                        // the credentials are wrong
)

// end ends a check of cred counted on a, p (pair's) and u (user name's): a failure at
// time at is charged (into debt if need be) and cred remembered as the
// pair's last failed credentials, a pass makes the pair known (an
// undecided check does neither: a guess abandoned while it waited for
// its bcrypt made its pair known), and the waiting checks are woken.
func (g *loginGuard) end(pair string, a, p, u *bucket, cred credKey, costly bool, outcome checkOutcome, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a.inflight--
	p.inflight--
	u.inflight--
	if costly {
		a.costly--
	}
	switch outcome {
	case checkFailed:
		a.l.ReserveN(at, 1)
		p.l.ReserveN(at, 1)
		u.l.ReserveN(at, 1)
		p.failed, p.failedAt = cred, at
	case checkPassed:
		g.noteKnownLocked(pair, at)
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

// isKnown reports whether user logged in correctly from ip within
// knownPairTTL of now: its credential check may go first
// (boss.WithPriority).
func (g *loginGuard) isKnown(ip, user string, now time.Time) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.knownLocked(addrKey(ip)+"\x00"+userKey(user), now)
}

// knownLocked reports whether pair logged in correctly within
// knownPairTTL of now (mu held).
func (g *loginGuard) knownLocked(pair string, now time.Time) bool {
	at, ok := g.known[pair]
	return ok && now.Sub(at) < knownPairTTL && !now.Before(at.Add(-time.Minute))
}

// noteKnownLocked records pair's correct login at (mu held). A table at
// bucketTableMax pairs first forgets, of a sample of 64 (map order), those
// past knownPairTTL, or else the one logged in longest ago.
func (g *loginGuard) noteKnownLocked(pair string, at time.Time) {
	if _, ok := g.known[pair]; !ok && len(g.known) >= bucketTableMax {
		oldest, n, expired := "", 0, false
		for k, t := range g.known {
			if at.Sub(t) >= knownPairTTL {
				delete(g.known, k)
				expired = true
			} else if oldest == "" || t.Before(g.known[oldest]) {
				oldest = k
			}
			if n++; n == 64 {
				break
			}
		}
		if !expired {
			delete(g.known, oldest)
		}
	}
	if _, ok := g.known[pair]; ok {
		g.knownTouched = true
	} else {
		g.knownDirty = true
	}
	g.known[pair] = at
}

// maxUserKey is the longest user name the guard keys as it is, bytes;
// longer ones by their hash (userKey).
const maxUserKey = 64

// userKey is the guard's key of a user name: the name, or for one longer
// than maxUserKey "#" and the hex of the first 128 bits of its SHA-256, so
// that a flood of made-up names of a few kilobytes each (as long as a
// header may be) holds at most about 100 bytes a key in each table.
func userKey(user string) string {
	if len(user) <= maxUserKey {
		return user
	}
	sum := sha256.Sum256([]byte(user))
	return "#" + hex.EncodeToString(sum[:16])
}

// addrKey is the guard's key of a client address: its client key as the
// connection limit keys it (connlimit.AddrKey: an IPv4-mapped address as
// IPv4, an IPv6 address's /64), written as the address for an IPv4 one
// (as snapshots of known logins hold it) and as the prefix for IPv6; the
// text itself if it does not parse.
func addrKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	k := connlimit.AddrKey(a)
	if k.Addr().Is6() {
		return k.String()
	}
	return k.Addr().String()
}
