package deliver

import (
	"container/heap"
	"time"
)

// setStop makes the play hold itself (as a PAUSE does) when its clock
// reaches pts (90 kHz ticks on the index's unwrapped scale, before any
// shift): every unit due before it is sent, none at or after it, and a
// release goes on from the next packet of each track. ok false clears it.
func (p *esPlay) setStop(pts int64, ok bool) {
	p.mu.Lock()
	p.stop, p.stopSet = pts, ok
	p.restoreLocked()
	p.mu.Unlock()
	p.signal()
}

// setAsideLocked takes unit u, the next to send and at or past the stop,
// off the queue, into p.beyond, when a unit before the stop (its own time
// on the index's scale) read before it is still queued: across a
// timestamp jump forward (a splice) the audio from past the jump, placed
// on the play's timeline with the pictures before it, comes up before
// the last of them, which the stop would have held back (up to 0.7 s of
// pictures, sent after the PLAY on, after that audio). Once no such unit
// is left (or the queue has nothing else), the units set aside go back
// (restoreLocked) and the stop holds the play. Units read after u are
// not waited for: where the timestamps jump back, those before the stop
// follow it. p.mu held.
func (p *esPlay) setAsideLocked(u *esUnit) bool {
	n := max(u.n, p.beyondN)
	for _, v := range p.q {
		if v != u && v.n < n && v.at-v.shift < p.stop {
			heap.Pop(&p.q) // u, the first
			p.beyond, p.beyondN = append(p.beyond, u), n
			return true
		}
	}
	restored := len(p.beyond) > 0
	p.restoreLocked()
	return restored // the next to send may be one of them
}

// restoreLocked puts the units set aside (setAsideLocked) back on the
// queue. p.mu held.
func (p *esPlay) restoreLocked() {
	for _, v := range p.beyond {
		heap.Push(&p.q, v)
	}
	clear(p.beyond)
	p.beyond, p.beyondN = p.beyond[:0], 0
}

// stopWallLocked returns when the play holds at its stop, the next unit
// to send being past it with shift shift: at the stop's time on that
// unit's scale, though the last unit before it went out after that (late,
// on a loaded machine): the clock stands at the stop, where the reports
// and a PLAY on put it and the next unit goes on from. A stop behind what
// was sent, on the timeline (set behind it, or, on the next unit's shift,
// behind the last unit sent: a stop between a timestamp jump's two sides,
// the next unit past the jump), holds where the last unit was sent, not
// back where the stop falls on the next unit's scale (as far back as the
// jump). p.mu held.
func (p *esPlay) stopWallLocked(shift int64) time.Time {
	at := p.wallOfLocked(p.stop + shift)
	if p.stop+shift <= p.sentDue && at.Before(p.sentWall) {
		at = p.sentWall
	}
	return at
}

// nextShiftLocked returns the shift the stop is to be placed on: the
// next unit's when it is at or past the stop, else the last unit sent's
// (the next past the stop is not known yet). p.mu held.
func (p *esPlay) nextShiftLocked() int64 {
	if len(p.q) > 0 && p.q[0].due-p.q[0].shift >= p.stop {
		return p.q[0].shift
	}
	return p.sentShift
}

// notPastStopLocked returns now, or, while a stop is set and now is past
// the stop's time before the play holds there (the last unit before it
// goes out late), where the hold is to place the clock
// (stopWallLocked): the clock does not run past it, so that the sender
// reports' RTP times never go back at the hold, nor does a PAUSE then
// hold it past it (its Position, a PLAY on's rtptime). p.mu held.
func (p *esPlay) notPastStopLocked(now time.Time) time.Time {
	if !p.stopSet || !p.clockSet {
		return now
	}
	if at := p.stopWallLocked(p.nextShiftLocked()); now.After(at) {
		return at
	}
	return now
}
