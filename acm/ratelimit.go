package acm

import (
	"sync"
	"time"

	"vodcluster/proto/durtext"
)

// Defaults of the per-subscriber request limit (Manager.RequestsPerUser,
// Manager.RequestRefill): 20 title requests at once, then 2 a second.
//
// A title request at the front door is counted once per viewer start or
// zap: a player's DESCRIBE (the first one, without credentials, is a 401
// and not counted), or an HTTP GET of the title's .ts or playlist (an
// HTTP player that seeks by reopening the front door's URL is counted per
// seek); the streaming itself goes to the node. A subscriber holds at
// most DefaultMaxSessionsPerUser (8) sessions, so a burst of 20 covers
// every box of a household starting at once with a retry each (after a
// power cut, or a manager takeover) or a burst of seeks, and a refill of
// 2 a second is more than viewers zap (a player takes a second or more
// to start a stream) even on two boxes at once; a player stuck in a loop
// of DESCRIBE/SETUP or GET, tens to hundreds a second, is held to 2 a
// second.
const (
	DefaultRequestsPerUser = 20
	DefaultRequestRefill   = 500 * time.Millisecond
)

// rateLimitNote is how often at most a subscriber's refusals are logged
// at WARN; the others are logged at debug (a player in a loop must not
// flood the logs; the metric counts every refusal).
const rateLimitNote = time.Minute

// requestLimiter limits the front-door title requests of each
// subscriber with a token bucket (golang.org/x/time/rate) per user name:
// burst requests at once, one more every refill, over RTSP and HTTP
// together, in this manager (an active and a standby manager each keep
// their own). A refused request spends nothing. The table of buckets is a
// bucketTable of at most bucketTableMax subscribers (a subscriber whose
// bucket is whole again is as if new). Safe for concurrent use; a nil
// *requestLimiter allows everything.
type requestLimiter struct {
	mu sync.Mutex
	t  *bucketTable
}

// newRequestLimiter returns a limiter of burst requests per subscriber
// (at least 1), one more every refill; nil (no limit) when burst < 0.
func newRequestLimiter(burst int, refill time.Duration) *requestLimiter {
	if burst < 0 {
		return nil
	}
	return &requestLimiter{t: newBucketTable(max(burst, 1), refill, bucketTableMax)}
}

// allow takes one request of user's at now. When the bucket is empty it
// returns ok false, the wait until it holds a request again, and note
// true when this is the subscriber's first refusal logged for
// rateLimitNote (the caller logs it above debug).
func (l *requestLimiter) allow(user string, now time.Time) (ok bool, wait time.Duration, note bool) {
	if l == nil {
		return true, 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.t.get(user, now)
	if b.l.AllowN(now, 1) {
		return true, 0, false
	}
	wait = refillWait(b.l.TokensAt(now), l.t.refill)
	if note = b.noted.IsZero() || now.Sub(b.noted) >= rateLimitNote || now.Before(b.noted); note {
		b.noted = now
	}
	return false, wait, note
}

// checkRequestRate charges one front-door title request of the
// authenticated user over protocol (store.ProtoRTSP, store.ProtoHTTP)
// to the subscriber's bucket: nil, or a retryLater wrapping
// errRateLimited with the wait until the next request is allowed.
func (m *Manager) checkRequestRate(user, protocol, title string) error {
	ok, wait, note := m.requests.allow(user, m.now())
	if ok {
		return nil
	}
	if note {
		m.log.Warn("title requests refused: subscriber over the request limit (further refusals for a minute at debug)",
			"user", user, "protocol", protocol, "title", title, "burst", m.RequestsPerUser, "refill", m.RequestRefill)
	} else {
		m.log.Debug("title request refused: subscriber over the request limit", "user", user, "protocol", protocol, "title", title, "retry_after", durtext.About(wait))
	}
	return retryLater{errRateLimited, wait}
}
