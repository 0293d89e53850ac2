package store

import (
	"math/rand/v2"
	"time"
)

// Defaults of the retries of a fill the origin interrupted (Config.Retry,
// Config.RetryMax, Config.RetryFor).
const (
	DefaultRetry    = 200 * time.Millisecond // first pause before a retry
	DefaultRetryMax = 2 * time.Second        // longest pause between two attempts
	DefaultRetryFor = 30 * time.Second       // how long a fill retries without receiving a byte (queued time aside)
	// DefaultStallAfter is Config.StallAfter's default: far above the
	// time between two chunks of any transfer paced at a title's bitrate
	// or more (a 64 KiB chunk every 0.13 s at 4 Mbit/s).
	DefaultStallAfter = 10 * time.Second
)

// retrier paces the attempts of one fill after the origin interrupted it:
// pauses doubling from base up to max, each jittered into [1/2, 1] of its
// step so that the fills of one node do not return together, for at most
// window after the first failure since the fill last received bytes, not
// counting the time its attempts since spent queued at the origin for a
// channel (queued): a busy origin that queues a retry longer than the
// window has not failed for that long.
type retrier struct {
	base, max, window time.Duration

	step  time.Duration // the next pause before jitter
	since time.Time     // first failure since the last progress, moved later by the queue time since; zero = none
}

// progress notes that the fill received bytes: the next failure starts a
// new window with the shortest pause.
func (r *retrier) progress() { r.since = time.Time{} }

// queued notes that an attempt after the window's start waited d at the
// origin for a channel before its transfer started: d does not count
// against the window.
func (r *retrier) queued(d time.Duration) {
	if !r.since.IsZero() && d > 0 {
		r.since = r.since.Add(d)
	}
}

// next returns the pause before the next attempt at now, or false when the
// window has passed. The last pause ends at the window's end, so that one
// attempt is made there.
func (r *retrier) next(now time.Time) (time.Duration, bool) {
	if r.since.IsZero() {
		r.since, r.step = now, r.base
	}
	left := r.window - now.Sub(r.since)
	if left <= 0 {
		return 0, false
	}
	d := r.step/2 + rand.N(r.step/2+1)
	r.step = min(r.step*2, r.max)
	return min(d, left), true
}
