package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultReplayCap is the most Digest responses a Replays remembers at
// once (about 100 bytes each, 100 MB in all): 3,300 accepted Digest logins
// a second for the 5-minute DefaultNonceTTL.
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
//
// A response is remembered as 16 bytes of SHA-256(nonce, response), in a
// set and in a queue in the order accepted: all are remembered for the
// same time, so the expired ones are at the queue's head and each First
// forgets them at a cost of O(1) amortized, full or not.
type Replays struct {
	mu    sync.Mutex
	ttl   time.Duration
	cap   int
	seen  map[replayKey]struct{}
	queue []replayEntry // oldest first, from head
	head  int
}

// replayKey names a nonce and response: SHA-256 of both, truncated.
type replayKey [16]byte

// replayEntry is a remembered response and when it may be forgotten
// (Unix ns).
type replayEntry struct {
	key   replayKey
	until int64
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
	return &Replays{ttl: ttl, cap: capacity, seen: make(map[replayKey]struct{})}
}

// First records the response sent with nonce at now and reports whether
// it is the first time: false for a response already accepted within the
// TTL. Call it only for a response checked right (a wrong response must
// not take the place of the right one). When capacity responses are
// remembered and none has expired, the oldest is forgotten for it (a
// replay of that one is then bounded by its nonce's age only): it
// returned true without recording, so that once one subscriber's flood
// of logins had filled it, every response accepted after could be
// replayed.
func (r *Replays) First(nonce, response string, now time.Time) bool {
	h := sha256.New()
	h.Write([]byte(nonce))
	h.Write([]byte{0})
	h.Write([]byte(response))
	var key replayKey
	copy(key[:], h.Sum(nil))
	t := now.UnixNano() // wall clock: the tokens' expiry (exp) is
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.head < len(r.queue) && r.queue[r.head].until <= t {
		delete(r.seen, r.queue[r.head].key)
		r.head++
	}
	if r.head > len(r.queue)/2 {
		// Half the queue is forgotten: move the rest down (amortized O(1)).
		r.queue = r.queue[:copy(r.queue, r.queue[r.head:])]
		r.head = 0
	}
	if _, ok := r.seen[key]; ok {
		return false
	}
	if len(r.seen) >= r.cap && r.head < len(r.queue) {
		delete(r.seen, r.queue[r.head].key)
		r.head++
	}
	r.seen[key] = struct{}{}
	r.queue = append(r.queue, replayEntry{key, now.Add(r.ttl + nonceSkew).UnixNano()}) // wall clock: as exp
	return true
}

// Len returns how many responses are remembered.
func (r *Replays) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}
