package acm

import (
	"time"

	"golang.org/x/time/rate"
)

// bucketTableMax is the number of keys a bucketTable of the front door
// remembers (failed logins per client IP and user, per client IP; title
// requests per subscriber): about 100 bytes a key, some 10 MB a full
// table.
const bucketTableMax = 100_000

// bucket is one key's token bucket (golang.org/x/time/rate) and what its
// owner keeps with it.
type bucket struct {
	l *rate.Limiter
	// inflight counts the key's uses in progress (loginGuard: credential
	// checks); a bucket with one is never forgotten.
	inflight int
	// costly counts, of inflight, the Basic (bcrypt) checks under an
	// address's key (loginGuard: maxAddrChecks).
	costly int
	// noted is when a refusal under the key was last logged above debug
	// (requestLimiter); zero: never.
	noted time.Time
	// failed identifies the credentials whose check last failed under the
	// key and failedAt when (loginGuard); zero: none.
	failed   credKey
	failedAt time.Time
}

// bucketTable is a bounded table of token buckets by key, each allowing
// burst at once and one more every refill. It holds at most max keys:
// when it is full, the keys whose bucket is whole again and that have no
// use in flight are forgotten (they are as if new; a scan at most once a
// second), and if none are, a random key without a use in flight makes
// room, so a flood of keys neither grows the table nor switches the
// limit off (a key of the flood's is the likely one to go). Not safe for
// concurrent use: its owner's lock guards it.
type bucketTable struct {
	burst  int
	refill time.Duration
	max    int
	keys   map[string]*bucket
	pruned time.Time // last scan of the full table
}

// newBucketTable returns an empty table of buckets of burst tokens (at
// least 1), refilled one every refill, holding at most max keys.
func newBucketTable(burst int, refill time.Duration, max int) *bucketTable {
	return &bucketTable{burst: burst, refill: refill, max: max, keys: map[string]*bucket{}}
}

// get returns key's bucket at now, created whole when missing.
func (t *bucketTable) get(key string, now time.Time) *bucket {
	if len(t.keys) >= t.max && (now.Sub(t.pruned) >= time.Second || now.Before(t.pruned)) {
		t.pruned = now
		t.prune(now)
	}
	if b := t.keys[key]; b != nil {
		return b
	}
	if len(t.keys) >= t.max {
		for k, b := range t.keys {
			if len(t.keys) < t.max {
				break
			}
			if b.inflight == 0 {
				delete(t.keys, k)
			}
		}
	}
	b := &bucket{l: rate.NewLimiter(rate.Every(t.refill), t.burst)}
	t.keys[key] = b
	return b
}

// prune forgets the keys whose bucket is whole at now and that have no
// use in flight.
func (t *bucketTable) prune(now time.Time) {
	for k, b := range t.keys {
		if b.inflight == 0 && b.l.TokensAt(now) >= float64(t.burst) {
			delete(t.keys, k)
		}
	}
}

// refillWait returns how long a bucket holding tokens waits to hold one
// again, refilling one every refill.
func refillWait(tokens float64, refill time.Duration) time.Duration {
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(refill))
}
