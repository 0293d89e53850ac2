package vodnode

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
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
// bitrate, after a burst of httpBurst seconds of media (at least 256 KiB).
// The zero value does not pace (a title of unknown bitrate). Safe for
// concurrent use once started.
type pacing struct {
	lim        atomic.Pointer[rate.Limiter]
	limit      rate.Limit // bytes/s
	burst      int        // bytes
	lastRefill atomic.Int64
}

// start sets the pace for a title of bitrate bit/s (≤ 0: no pacing).
func (p *pacing) start(bitrate int64) {
	if bitrate <= 0 {
		return
	}
	bps := float64(bitrate) / 8
	p.limit, p.burst = rate.Limit(bps*httpPace), max(int(bps*httpBurst), 256<<10)
	p.lim.Store(rate.NewLimiter(p.limit, p.burst))
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
	if now.UnixNano()-last < int64(httpSeekRefill) || !p.lastRefill.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	p.lim.Store(rate.NewLimiter(p.limit, p.burst))
}
