package auth

import (
	"sync"
	"time"
)

// DefaultReplayCap is the most Digest responses a Replays remembers at
// once (about 100 bytes each): 3,300 accepted Digest logins a second for
// the 5-minute DefaultNonceTTL.
const DefaultReplayCap = 1 << 20

// Replays remembers the Digest responses accepted within the nonce TTL so
// that each is accepted once: a request whose Authorization header was
// captured on the way and sent again, with the same nonce, nonce count and
// response, is answered 401 with stale=true, as for an expired nonce (RFC
// 7616 sections 3.3 and 5.5: the server may refuse a nonce it has seen
// before; a client that knows the password retries at once with the fresh
// nonce, a replayer cannot). A client using qop=auth counts nc up on each
// request of a nonce, so it never sends the same response twice; one
// without qop that sends the same request twice with one nonce takes one
// more round trip. What a Replays holds lives in this process only:
// managers sharing a secret do not share it. Safe for concurrent use.
type Replays struct {
	mu        sync.Mutex
	ttl       time.Duration
	cap       int
	seen      map[string]time.Time // nonce+" "+response -> when it may be forgotten
	nextSweep time.Time
}

// NewReplays returns a Replays remembering each response for ttl (the
// nonces' TTL: DefaultNonceTTL when ttl <= 0) and at most capacity of them
// (DefaultReplayCap when capacity <= 0).
func NewReplays(ttl time.Duration, capacity int) *Replays {
	if ttl <= 0 {
		ttl = DefaultNonceTTL
	}
	if capacity <= 0 {
		capacity = DefaultReplayCap
	}
	return &Replays{ttl: ttl, cap: capacity, seen: make(map[string]time.Time)}
}

// First records the response sent with nonce at now and reports whether
// it is the first time: false for a response already accepted within the
// TTL. Call it only for a response checked right (a wrong response must
// not take the place of the right one). When capacity responses are
// remembered and none has expired, First returns true without recording
// (the nonce's age still bounds a replay).
func (r *Replays) First(nonce, response string, now time.Time) bool {
	key := nonce + " " + response
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.seen[key]; ok && now.Before(until) {
		return false
	}
	if !now.Before(r.nextSweep) || len(r.seen) >= r.cap {
		for k, until := range r.seen {
			if !now.Before(until) {
				delete(r.seen, k)
			}
		}
		r.nextSweep = now.Add(r.ttl / 10)
	}
	if len(r.seen) < r.cap {
		r.seen[key] = now.Add(r.ttl + nonceSkew)
	}
	return true
}

// Len returns how many responses are remembered (expired ones not yet
// swept included).
func (r *Replays) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}
