package vodnode

import (
	"sync"
	"time"
)

// pauseClock measures how long a session was paused after its start,
// for the paused_ms of its ENDED (the session record's paused_s): an
// RTSP session from a PAUSE after its start to the next PLAY, an HTTP one
// from the last bytes a stalled request took, when it was the viewer's
// last and only one in progress, to its next request; a
// pause under way is counted to the session's end. The zero value is a
// session never paused.
type pauseClock struct {
	mu    sync.Mutex
	since time.Time     // when the pause under way began; zero: none
	total time.Duration // the pauses that ended
}

// pause notes a pause from now; a pause under way goes on (a second
// PAUSE does not restart it).
func (c *pauseClock) pause(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since.IsZero() {
		c.since = now
	}
}

// resume ends the pause under way, if any, at now.
func (c *pauseClock) resume(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.since.IsZero() {
		c.total += max(0, now.Sub(c.since))
		c.since = time.Time{}
	}
}

// until returns how long the session was paused up to end, its end: a
// pause under way is counted to end (none of it when end is before it,
// a timed-out session ending at its last sign of life).
func (c *pauseClock) until(end time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.total
	if !c.since.IsZero() {
		d += max(0, end.Sub(c.since))
	}
	return d
}
