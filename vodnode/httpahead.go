package vodnode

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"vodcluster/vodnode/store"
)

// originAhead is how far ahead of the part filled a range must start,
// in seconds of the title at its bitrate, for its bytes to be read from
// the origin rather than wait for the fill (which runs faster than the
// bitrate: a closer range waits less than this). libavformat's players
// (ffmpeg, ffprobe, ffplay, mpv) read a progressive .ts's last 250 kB
// before they play (its duration): of a title being filled, that waited
// for the whole fill.
const originAhead = 5 * time.Second

// originAheadMin is the least gap of originAhead, bytes (a low-bitrate
// title's five seconds).
const originAheadMin = 64 << 10

// originAheadMax bounds one origin read of a range ahead of the fill, in
// seconds of the title at its bitrate (originAheadMaxMin bytes at
// least; at most to the end of the range asked, when it is known:
// titleReader.rangeEnd): what a player's probes and seek search read, and the first
// seconds of a play that starts there. The transfer takes one of the
// origin's channels that the manager does not count (its budget is the
// fills'), but is preemptible: a fill that queues at the origin takes its
// channel (the range then waits for its own fill). Bounded so, and to
// Node.OriginRanges at a time per node, it does not send the origin's bytes
// far ahead of the viewer's pace: once the viewer has reached its end
// with the fill still far behind (a viewer resuming a film far into it),
// the next read opens there, unless another range of the node waits for
// a read (aheadSlots): that range's read comes first.
var originAheadMax = 30 * time.Second

// originAheadMaxMin is the least bound of originAheadMax, bytes.
var originAheadMaxMin int64 = 1 << 20

// DefaultOriginRanges is Node.OriginRanges's default: how many origin
// reads of ranges ahead of their fill a node has open at a time; a range
// past it waits for its fill, and asks again (aheadRetry, or at once when
// a read closes).
const DefaultOriginRanges = 1

// aheadRetry is the first pause before a range still far ahead of its
// fill asks the origin again after its read was refused (no channel free
// at the origin, another such read open on the node) or ended (a fill
// took its channel); each refusal in a row doubles it up to
// aheadRetryMax, jittered into [1/2, 1] of its step so that a node's
// waiting ranges do not ask together. A range waiting for the node's
// read asks at once when it closes. Variables for tests.
var aheadRetry, aheadRetryMax = time.Second, 8 * time.Second

// aheadSlots is a node's origin reads of HTTP ranges far ahead of their
// fill: the slots held (at most max) and how many ranges wait
// to ask the origin, so that a read that reached its bound gives its turn
// to a waiting range rather than open the next (one viewer resuming a
// film far into it held the node's read until its fill caught up, and
// other viewers' probes waited for their fills meanwhile). A viewer's
// newer range takes the slot of its session's older one: a player that
// asks for a new range has moved on (mpv's seek opens a range while the
// one it read before stays open, and that one held the read for 30 s of
// the title while the seek waited).
type aheadSlots struct {
	max     int // Node.OriginRanges resolved (set at Start): negative, none
	mu      sync.Mutex
	held    []*aheadSlot
	waiting int
	freed   chan struct{} // closed, and forgotten, when a slot is given back; nil: none made
}

// aheadSlot is one slot of aheadSlots, held by the range of viewer owner
// (an *httpSession, or an RTSP session's *aheadSource) numbered seq
// (titleReader.seq, aheadExtent.seq).
type aheadSlot struct {
	hs  any
	seq int64
	// taken: a newer range of the session took the slot (aheadSlots.mu);
	// the read holding it is ended (end).
	taken bool
	end   func() // ends the read holding the slot; nil until it is open (aheadSlots.mu)
}

// take takes a slot for the range of hs numbered seq: a free one, or the
// one an older range of hs holds (that range's read is ended, and it does
// not ask again). It returns nil when neither, with superseded when a
// newer range of hs holds one (this range then does not ask again).
func (s *aheadSlots) take(hs any, seq int64) (sl *aheadSlot, superseded bool) {
	s.mu.Lock()
	sl = &aheadSlot{hs: hs, seq: seq}
	if len(s.held) < s.max {
		s.held = append(s.held, sl)
		s.mu.Unlock()
		return sl, false
	}
	i := slices.IndexFunc(s.held, func(h *aheadSlot) bool { return h.hs == hs })
	if i < 0 || s.held[i].seq > seq {
		s.mu.Unlock()
		return nil, i >= 0
	}
	old := s.held[i]
	old.taken, s.held[i] = true, sl
	end := old.end
	s.mu.Unlock()
	if end != nil {
		end()
	}
	return sl, false
}

// opened records how to end the read now holding sl, and reports false
// (not recording it) when a newer range of its session has taken sl
// meanwhile: the caller ends the read then.
func (s *aheadSlots) opened(sl *aheadSlot, end func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl.taken {
		return false
	}
	sl.end = end
	return true
}

// lost reports whether a newer range of sl's session took sl.
func (s *aheadSlots) lost(sl *aheadSlot) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sl.taken
}

// release gives sl back (unless a newer range took it) and wakes the
// waiting ranges.
func (s *aheadSlots) release(sl *aheadSlot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.held, sl); i >= 0 {
		s.held = slices.Delete(s.held, i, i+1)
	}
	if s.freed != nil {
		close(s.freed)
		s.freed = nil
	}
}

// wait counts a range as waiting to ask the origin until done is called,
// and returns a channel closed when a slot is given back meanwhile; with
// ifFree, one already closed when a slot is free now (a range refused for
// want of one asks again at once: the slot came back after its refusal).
func (s *aheadSlots) wait(ifFree bool) (freed <-chan struct{}, done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting++
	done = func() {
		s.mu.Lock()
		s.waiting--
		s.mu.Unlock()
	}
	if ifFree && len(s.held) < s.max {
		return closedChan, done
	}
	if s.freed == nil {
		s.freed = make(chan struct{})
	}
	return s.freed, done
}

// closedChan is a channel that is closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// contended reports whether a range waits to ask the origin.
func (s *aheadSlots) contended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting > 0
}

// aheadRead is an open origin read of a range ahead of its fill, holding
// one of the node's slots until close. close is safe to call more than
// once and from another goroutine: the request's context ending closes
// it (ServeContent's reader of a request of several ranges may still be
// in Read when the handler returns), and so does a newer range of the
// session taking its slot.
type aheadRead struct {
	rng   *store.OriginRange
	end   int64 // where its bytes end (originAheadMax)
	slot  *aheadSlot
	slots *aheadSlots
	once  sync.Once
	stop  func() bool // the context.AfterFunc that closes it
	// idle closes it, giving its slot to a waiting viewer, when its
	// viewer has not asked for more for aheadIdle (a paused player, or
	// one that stopped reading: its write to the client blocks).
	idle *time.Timer
}

// aheadIdle is how long an HTTP range's origin read may go without its
// viewer asking for more before it gives the node's read to another
// viewer waiting for one (a paused player held it until its write
// deadline, and RTSP or HTTP viewers resuming on the node waited). A
// playing viewer asks again as soon as its last bytes are written.
var aheadIdle = 2 * time.Second

func (a *aheadRead) close() {
	a.once.Do(func() {
		a.rng.Close()
		a.slots.release(a.slot)
	})
}

// farAhead reports whether r.off is far ahead of the title's fill
// (originAhead): its bytes are then read from the origin when it can.
func (r *titleReader) farAhead() bool {
	v := r.hs.t().View()
	if v.Complete || v.Err != nil {
		return false
	}
	return r.off-v.Index.Size >= aheadGap(r.hs.meta.Bitrate)
}

// aheadGap returns originAhead of a title at bitrate bit/s in bytes, at
// least originAheadMin: how far past the title's fill a read starts from
// the origin rather than waits for the fill.
func aheadGap(bitrate int64) int64 {
	return max(int64(originAhead.Seconds()*float64(bitrate)/8), originAheadMin)
}

// openAhead opens the origin's read of the range from r.off when it is
// far ahead of the title's fill (farAhead), the node has a slot free
// (Node.OriginRanges) and the origin has a transfer channel free; else the
// range waits for the fill, and asks again at aheadNext (or when a read
// of the node closes) if it is still far ahead then.
func (r *titleReader) openAhead() {
	if !r.farAhead() {
		return
	}
	if r.n.ahead.max <= 0 {
		r.noAhead = true
		r.n.log.Debug("range ahead of the fill not read from the origin: the node reads none so (origin_ranges -1); it waits for the fill", "title", r.hs.title, "offset", r.off)
		return
	}
	if r.seq == 0 {
		r.seq = r.hs.aheadSeq.Add(1)
	}
	sl, newer := r.n.ahead.take(r.hs, r.seq)
	r.slotRefused = sl == nil && !newer
	switch {
	case newer:
		r.superseded()
		return
	case sl == nil:
		r.retryAhead()
		r.n.log.Debug("range ahead of the fill not read from the origin: the node has another such read open; it waits for the fill", "title", r.hs.title, "offset", r.off, "retry_in", time.Until(r.aheadNext).Round(time.Millisecond))
		return
	}
	bps := float64(r.hs.meta.Bitrate) / 8
	length := min(max(int64(originAheadMax.Seconds()*bps), originAheadMaxMin), r.hs.meta.Size-r.off)
	if r.rangeEnd > r.off {
		length = min(length, r.rangeEnd-r.off) // a small range far ahead: the origin sends it, not 30 s
	}
	rng, err := r.n.store.OriginRange(r.ctx, r.hs.t(), r.off, length)
	if err != nil {
		r.n.ahead.release(sl)
		if r.n.ahead.lost(sl) {
			r.superseded()
			return
		}
		r.retryAhead()
		r.n.log.Debug("range ahead of the fill not read from the origin: it waits for the fill", "title", r.hs.title, "offset", r.off, "filled", r.hs.t().View().Index.Size, "err", err, "retry_in", time.Until(r.aheadNext).Round(time.Millisecond))
		return
	}
	a := &aheadRead{rng: rng, end: r.off + length, slot: sl, slots: &r.n.ahead}
	if !r.n.ahead.opened(sl, a.close) {
		a.close()
		r.superseded()
		return
	}
	a.stop = context.AfterFunc(r.ctx, a.close)
	r.ahead, r.aheadStep = a, 0
}

// superseded notes that a newer range of the session took the range's
// origin read: it waits for the fill and does not ask the origin again.
func (r *titleReader) superseded() {
	r.noAhead = true
	r.n.log.Debug("range ahead of the fill: a newer range of the viewer has the node's origin read; this one waits for the fill", "title", r.hs.title, "offset", r.off)
}

// retryAhead sets when the range may ask the origin again (aheadRetry).
func (r *titleReader) retryAhead() {
	var wait time.Duration
	wait, r.aheadStep = aheadBackoff(r.aheadStep)
	r.aheadNext = time.Now().Add(wait)
}

// aheadBackoff returns the pause before a read far ahead of a fill asks
// the origin again after a refusal: step, the backoff's step (0 before
// the first refusal in a row: aheadRetry), jittered into [1/2, 1] of it;
// and the next step, doubled up to aheadRetryMax.
func aheadBackoff(step time.Duration) (wait, next time.Duration) {
	if step == 0 {
		step = aheadRetry
	}
	return step/2 + rand.N(step/2+1), min(2*step, aheadRetryMax)
}

// nextAhead reads the next bytes, at most want, of a range read from the
// origin into aheadBuf and returns how many (fromAhead set), or 0 when
// they are to come from the title's file: the fill has reached r.off (the
// origin's read is closed then), or no read is open (none could be,
// openAhead; or it failed: the range waits for the fill then, and asks
// again later). A read that reached its bound with the fill still far
// behind is followed by the next from there, unless another range of the
// node waits to ask the origin (it goes first); one whose slot a newer
// range of the session took is not (superseded). Errors: the context's.
func (r *titleReader) nextAhead(want int) (int, error) {
	r.fromAhead = false
	if r.ahead != nil && r.ahead.idle != nil {
		r.ahead.idle.Stop()
	}
	if r.ahead != nil {
		v := r.hs.t().View()
		switch {
		case r.n.ahead.lost(r.ahead.slot): // a newer range of the session took it
			r.closeAhead()
			r.superseded()
		case v.Complete || v.Index.Size > r.off:
			r.closeAhead() // the fill has it
		case r.off >= r.ahead.end:
			r.closeAhead()
			if r.n.ahead.contended() {
				r.retryAhead() // its turn to wait
				r.n.log.Debug("range ahead of the fill: its origin read reached its bound; another range waits for one and goes first", "title", r.hs.title, "offset", r.off)
			}
		}
	}
	if r.ahead == nil && !r.noAhead && !time.Now().Before(r.aheadNext) {
		r.openAhead()
	}
	if r.ahead == nil {
		return 0, nil
	}
	k := int(min(int64(want), r.ahead.end-r.off))
	if cap(r.aheadBuf) < k {
		r.aheadBuf = make([]byte, k)
	}
	r.aheadBuf = r.aheadBuf[:k]
	if _, err := io.ReadFull(r.ahead.rng, r.aheadBuf); err != nil {
		lost := r.n.ahead.lost(r.ahead.slot)
		r.closeAhead()
		if cerr := r.ctx.Err(); cerr != nil {
			return 0, cerr
		}
		if lost {
			r.superseded()
			return 0, nil
		}
		r.retryAhead()
		r.n.log.Info("range ahead of the fill: the origin's read ended (a fill that queued there took its channel: ABORTED; the origin stalled; or its viewer stopped reading while another waited for the node's read), the range waits for the fill and asks again later", "title", r.hs.title, "offset", r.off, "err", err, "retry_in", time.Until(r.aheadNext).Round(time.Millisecond))
		return 0, nil
	}
	r.fromAhead = true
	return k, nil
}

// armIdle starts the wait of aheadIdle for the viewer to ask for more,
// once the bytes nextAhead read are handed over to be written (paced
// already): a read its viewer does not come back to within it gives the
// node's read to a waiting viewer (closed; its range asks again when it
// reads on).
func (r *titleReader) armIdle() {
	a := r.ahead
	if a == nil {
		return
	}
	if a.idle == nil {
		a.idle = time.AfterFunc(aheadIdle, func() {
			if a.slots.contended() {
				a.close()
			}
		})
		return
	}
	a.idle.Reset(aheadIdle)
}

// closeAhead ends the origin's read of the range, if any.
func (r *titleReader) closeAhead() {
	if r.ahead != nil {
		if r.ahead.idle != nil {
			r.ahead.idle.Stop()
		}
		r.ahead.stop()
		r.ahead.close()
		r.ahead = nil
	}
	r.fromAhead = false
}

// waitFill waits until the title has bytes past r.off on disk and returns
// how many it has (the file's size once complete); with retry (the range
// far ahead of the fill, no origin read open), or 0 once the range may
// ask the origin again: at aheadNext, or at once when a read of the node
// closes. Errors: the fill's once it failed with no bytes past r.off,
// or the context's.
func (r *titleReader) waitFill(retry bool) (int64, error) {
	var due <-chan time.Time
	var freed <-chan struct{}
	if retry {
		tm := time.NewTimer(time.Until(r.aheadNext))
		defer tm.Stop()
		due = tm.C
		var done func()
		freed, done = r.n.ahead.wait(r.slotRefused)
		defer done()
	}
	var hold <-chan time.Time
	if r.hold != nil && r.hold.held.code != 0 {
		// The status line held (heldHeader) goes out at its due time,
		// the body then waiting for the fill as before.
		tm := time.NewTimer(time.Until(r.hold.held.due))
		defer tm.Stop()
		hold = tm.C
	}
	for {
		if avail, ok, err := filledPast(r.hs.t(), r.off); ok {
			return avail, err
		}
		if r.fillWake == nil {
			ch := make(chan struct{})
			if !r.hs.t().Notify(r.off, func() { close(ch) }) {
				continue
			}
			r.fillWake = ch
		}
		select {
		case <-r.fillWake:
			r.fillWake = nil
		case <-hold:
			// net/http sends a status line with the body's first bytes,
			// or when flushed: without the flush the release reached the
			// client only with the fill's first byte.
			r.hold.release()
			_ = http.NewResponseController(r.hold).Flush()
			hold = nil
		case <-due:
			return 0, nil
		case <-freed:
			r.aheadNext = time.Time{}
			return 0, nil
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
	}
}
