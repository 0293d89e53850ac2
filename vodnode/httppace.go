package vodnode

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"vodcluster/proto/monotime"
)

// httpSeekRefill is how often, at most, a seek gives an HTTP viewer its
// burst back (pacing.seeked): a player that jumps has an empty buffer
// again, and filling it at httpPace times the bitrate takes seconds
// (measured with hls.js in Chromium: a seek soon after the start took
// ~3 s, ~0.7 s with the burst back). Once per 30 s bounds what a client
// seeking without end gets above httpPace: httpBurst seconds of media per
// 30 s, 1/6 of its bitrate.
const httpSeekRefill = 30 * time.Second

// pacing paces an HTTP viewer's bytes (all its requests together) with a
// token bucket (golang.org/x/time/rate): httpPace times the title's
// bitrate, after a burst of httpBurst seconds of media (at least 256 KiB)
// as far as the node's burstPool grants it. The zero value does not pace
// (a title of unknown bitrate). Safe for concurrent use once started.
type pacing struct {
	lim        atomic.Pointer[rate.Limiter]
	limit      rate.Limit   // bytes/s
	burst      int          // bytes
	pool       *burstPool   // nil: bursts not shared out
	lastRefill atomic.Int64 // monotime.Of the last seek that refilled the burst; 0: none
}

// start sets the pace for a title of bitrate bit/s (≤ 0: no pacing), its
// burst taken from pool (nil: the whole burst).
func (p *pacing) start(bitrate int64, pool *burstPool) {
	if bitrate <= 0 {
		return
	}
	bps := float64(bitrate) / 8
	p.limit, p.burst, p.pool = rate.Limit(bps*httpPace), max(int(bps*httpBurst), 256<<10), pool
	p.lim.Store(p.newLimiter(time.Now()))
}

// newLimiter returns a bucket of p's pace holding the part of its burst
// the pool grants at now (the rest is taken out at once).
func (p *pacing) newLimiter(now time.Time) *rate.Limiter {
	l := rate.NewLimiter(p.limit, p.burst)
	if short := p.burst - p.pool.take(p.burst, now); short > 0 {
		l.ReserveN(now, short) // within the burst: always granted, never cancelled
	}
	return l
}

// burstPool shares out the HTTP viewers' bursts (the start of a viewer,
// and a seek) among the node's egress that no session reserves: a token
// bucket (golang.org/x/time/rate) filling at capacity minus reserved
// bit/s, holding one second of it. A crowd of HTTP viewers starting at
// once (ten HLS viewers in the same second took a 20 Mbit/s node to
// 25 Mbit/s) gets bursts only as far as the link has room; those who get
// none start at the viewer's pace (httpPace times the bitrate), and the
// sessions the node promised keep their bandwidth. Safe for concurrent
// use; a nil pool grants every burst whole (a node without an egress
// capacity).
type burstPool struct {
	mu  sync.Mutex
	lim *rate.Limiter // bytes/s
}

// newBurstPool returns the pool of a node with capacityBps of egress
// (bit/s; ≤ 0: unlimited, nil pool), nothing reserved yet.
func newBurstPool(capacityBps int64) *burstPool {
	if capacityBps <= 0 {
		return nil
	}
	bytes := capacityBps / 8
	return &burstPool{lim: rate.NewLimiter(rate.Limit(bytes), int(min(bytes, 1<<40)))} // full
}

// setSpare sets the egress no session reserves, bit/s (≤ 0: none: no
// burst is granted until sessions end).
func (p *burstPool) setSpare(spareBps int64) {
	if p == nil {
		return
	}
	bytes := max(spareBps/8, 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lim.SetLimit(rate.Limit(bytes))
	p.lim.SetBurst(int(min(bytes, 1<<40)))
}

// take grants up to n bytes of burst at now, as many as the pool holds.
func (p *burstPool) take(n int, now time.Time) int {
	if p == nil {
		return n
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k := min(n, int(p.lim.TokensAt(now)))
	if k <= 0 {
		return 0
	}
	p.lim.ReserveN(now, k)
	return k
}

// wait blocks until n more bytes may be sent, or ctx ends (its error).
func (p *pacing) wait(ctx context.Context, n int) error {
	l := p.lim.Load()
	if l == nil {
		return ctx.Err()
	}
	return l.WaitN(ctx, n)
}

// seeked tells that the viewer jumped to another place of the title (an
// HLS segment that does not follow the last it asked for, a byte range
// elsewhere than where its download was): it gets its burst back, unless
// a seek got it less than httpSeekRefill ago. Requests in progress share
// the new bucket (each wait takes the bucket of the moment).
func (p *pacing) seeked(now time.Time) {
	if p.lim.Load() == nil {
		return
	}
	last := p.lastRefill.Load()
	if monotime.Of(now)-last < int64(httpSeekRefill) || !p.lastRefill.CompareAndSwap(last, monotime.Of(now)) {
		return
	}
	p.lim.Store(p.newLimiter(now))
}
