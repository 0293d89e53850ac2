package vodnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"vodcluster/cdp/tsindex"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// rtspAheadMargin is how far before the time of a PLAY's Range an origin
// read of a seek far ahead of the fill starts, seconds of the title at
// its bitrate there: the keyframe presented at or before that time is
// sent before it (a GOP of a second or two, the mux's delay), and the
// offset of that time is an estimate (aheadSource.estimate).
const rtspAheadMargin = 4 * time.Second

// rtspAheadTries bounds the extents started for one PLAY: those that
// started after the keyframe of its time are started again earlier (a
// title whose bitrate up to there is below its mean: restartLocked), and
// those that started well before it later (above its mean: reaimLocked).
// Then the play plays from the last one, or from one more started at a
// point known to be early enough, or waits for the fill.
const rtspAheadTries = 4

// aheadSource is the deliver.Source of an RTSP session's stream (MP2T,
// or elementary streams: /es): the session's title and, after a PLAY
// whose Range starts far ahead of the title's fill (a set-top box resuming a film from its bookmark on a node
// that does not hold it), that part of the title read from the origin
// (aheadExtent) until the fill reaches it. Before, the play started when
// the fill got there: minutes for a film resumed an hour in.
//
// The extent's bytes go into the title's file at their own offsets
// (store.Title.WriteAhead) and are indexed as they come; once it holds
// the keyframe presented at or before the PLAY's time, State gives an
// index of the extent (with the title's first PCRs and PTS, so that
// positions and timestamps are the title's) rather than the fill's, and
// the stream's seek into the part not filled (deliver.Stream.Seek) starts
// there. Reads take the node's origin reads (Node.OriginRanges) as HTTP
// ranges far ahead do, 30 s of the title at a time kept at most that far
// ahead of the play, and end once the fill has every byte the extent
// read: the fill's index is given from then on. A PLAY elsewhere, or in
// trick play, drops the extent.
type aheadSource struct {
	n *Node
	// cur is the session's copy of the title: replaced (refilled) when
	// a PLAY acquired it again after its fill failed for the origin.
	cur  atomic.Pointer[store.Title]
	meta store.Meta

	mu      sync.Mutex
	ext     *aheadExtent // nil: none
	seq     int64        // numbers the extents (aheadSlots)
	waiters []sourceWaiter
	closed  bool
	clock   []clockPoint // where extents' first PCRs were: the title's clock (estimate)
	gave    atomic.Bool  // ReadAt has read bytes of the title: the stream had some to send
}

// sourceWaiter is a Notify waiting for more than after bytes.
type sourceWaiter struct {
	after int64
	fn    func()
}

// aheadExtent is the part of a title read from the origin for a play far
// ahead of the fill, from start on.
type aheadExtent struct {
	start  int64   // offset, bytes (a multiple of 188)
	target float64 // npt of the PLAY's Range, seconds
	tries  int     // extents started for this PLAY before this one
	seq    int64
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	// guarded by aheadSource.mu
	b       *tsindex.Builder   // the bytes read, from start
	end     int64              // the end of the bytes read (b indexes whole packets: its Size is below it by a packet's part)
	shifted bool               // pcrShift and ptsShift are known (the first PCR was read)
	pcrs    []tsindex.PCRPoint // the title's first two, then the extent's (on the title's clock)
	kfs     []tsindex.Keyframe // the extent's
	idx     *tsindex.Index     // what State gives once shown; replaced, never changed
	shown   bool               // it holds a keyframe presented at or before target
	settled bool               // and one presented after it: the play starts (its reads keep pace with it from then on)

	pcrShift   int64 // added to the extent's PCRs: whole 33-bit wraps
	ptsShift   int64 // added to its PTSs (ptsShifted: known)
	ptsShifted bool
	read       atomic.Int64  // the end of the stream's last read in it
	moved      chan struct{} // signalled (one slot) when read moves
}

// newAheadSource returns the Source of a session of title t.
func newAheadSource(n *Node, t *store.Title, meta store.Meta) *aheadSource {
	s := &aheadSource{n: n, meta: meta}
	s.cur.Store(t)
	return s
}

// title returns the copy of the title s reads.
func (s *aheadSource) title() *store.Title { return s.cur.Load() }

// refilled makes t, a new copy of the same version of s's title whose
// fill resumes from the partial the failed one left (refillRTSP), the
// copy s reads: an extent read for the failed copy is dropped, its
// waiters woken (a PLAY far ahead of the new fill starts one of its own).
func (s *aheadSource) refilled(t *store.Title) {
	s.mu.Lock()
	due := s.dropLocked()
	s.cur.Store(t)
	s.mu.Unlock()
	callAll(due)
}

// State gives the extent's index while the play is in it and the fill
// has not caught up with it; the fill's otherwise.
func (s *aheadSource) State() (*tsindex.Index, bool, error) {
	v := s.title().View()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked(v)
}

func (s *aheadSource) stateLocked(v *store.View) (*tsindex.Index, bool, error) {
	if e := s.ext; e != nil && e.shown && !v.Complete && v.Err == nil && v.Index.Size < e.idx.Size {
		return e.idx, e.end >= s.meta.Size, nil // read to the title's end: it plays to its end
	}
	return &v.Index, v.Complete, v.Err
}

// ReadAt reads the title's file: the fill's bytes, and the extent's it
// wrote there. A read short of bytes past the fill's once the fill
// stopped (it cut the file to what it filled before it says it failed)
// fails with store.ErrFillFailed, not as the disk's failure.
func (s *aheadSource) ReadAt(p []byte, off int64) (int, error) {
	t := s.title()
	n, err := t.ReadAt(p, off)
	if n > 0 {
		s.gave.Store(true)
	}
	if n < len(p) && off+int64(len(p)) > t.View().Index.Size && !t.AheadWritable() {
		if v := t.View(); !v.Complete {
			return n, fmt.Errorf("%w: the fill stopped; the bytes read from the origin past %d are cut", store.ErrFillFailed, v.Index.Size)
		}
	}
	s.mu.Lock()
	e := s.ext
	s.mu.Unlock()
	if e != nil && off >= e.start {
		if end := off + int64(n); end > e.read.Load() {
			e.read.Store(end)
			select {
			case e.moved <- struct{}{}:
			default:
			}
		}
	}
	return n, err
}

// Notify calls fn once more than after bytes are readable (State), the
// title is complete or its fill failed; false, not calling it, when so
// already.
func (s *aheadSource) Notify(after int64, fn func()) bool {
	var once sync.Once
	f := func() { once.Do(fn) }
	v := s.title().View()
	s.mu.Lock()
	idx, complete, err := s.stateLocked(v)
	if idx.Size > after || complete || err != nil {
		s.mu.Unlock()
		return false
	}
	fromExtent := s.ext != nil && idx == s.ext.idx
	if s.ext != nil {
		// Those the state satisfies were called, or will be by the
		// fill's Notify they registered with too: forgotten here (one a
		// fill chunk piled up while an extent was not shown).
		s.waiters = slices.DeleteFunc(s.waiters, func(w sourceWaiter) bool { return idx.Size > w.after })
		s.waiters = append(s.waiters, sourceWaiter{after: after, fn: f})
	}
	s.mu.Unlock()
	if !fromExtent && !s.title().Notify(after, f) {
		go f() // the fill moved past after meanwhile
	}
	return true
}

// wakeLocked takes the waiters that State now satisfies (all of them with
// all) for the caller to call once it unlocked s.mu.
func (s *aheadSource) wakeLocked(all bool) []func() {
	v := s.title().View()
	idx, complete, err := s.stateLocked(v)
	var due []func()
	keep := s.waiters[:0]
	for _, w := range s.waiters {
		if all || idx.Size > w.after || complete || err != nil {
			due = append(due, w.fn)
		} else {
			keep = append(keep, w)
		}
	}
	clear(s.waiters[len(keep):])
	s.waiters = keep
	return due
}

func callAll(fns []func()) {
	for _, f := range fns {
		f()
	}
}

// seek readies the source for a PLAY from npt seconds at Scale 1 (npt <
// 0: from where the play stands), before the stream's Seek: an extent
// that holds npt is kept; otherwise it is dropped and, when npt is far
// ahead of the fill (originAhead past the bytes filled, and the margin),
// an extent is started for it.
func (s *aheadSource) seek(npt float64) {
	if npt < 0 {
		return
	}
	v := s.title().View()
	s.mu.Lock()
	if e := s.ext; e != nil && e.holds(npt) {
		s.mu.Unlock()
		return
	}
	due := s.dropLocked()
	if !s.closed {
		if start, ok := s.extentStart(v, npt); ok {
			s.startLocked(start, npt, 0)
		}
	}
	s.mu.Unlock()
	callAll(due)
}

// wants reports whether a play from npt seconds would read from the
// origin and no extent of the source holds npt: normal play after trick
// play far ahead of the fill (drop).
func (s *aheadSource) wants(npt float64) bool {
	v := s.title().View()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ext != nil && s.ext.holds(npt) {
		return false
	}
	_, ok := s.extentStart(v, npt)
	return ok
}

// normalPlay reports whether a PLAY's Scale is granted as normal play
// (deliver.Stream.SetScale: 1, and slow motion, which is not offered).
func normalPlay(scale float64) bool {
	return math.IsNaN(scale) || math.Abs(scale) < 1 || scale == 1
}

// holds reports whether e is the extent of a play from npt: it was
// started for npt, or holds the keyframes presented at or before npt and
// after it (a later npt takes an extent of its own: this one's reads keep
// pace with where its play stands, and a seek past its last keyframe
// would wait for the play to move). Under aheadSource.mu.
func (e *aheadExtent) holds(npt float64) bool {
	if npt == e.target {
		return true
	}
	if !e.shown || len(e.kfs) == 0 {
		return false
	}
	return e.idx.KeyframeSeconds(0) <= npt && npt < e.idx.KeyframeSeconds(len(e.kfs)-1)
}

// extentStart returns where an extent for a play from npt starts, and
// false when none is to (the fill is near, or the title cannot be read
// so: no origin reads, no bitrate). The fill may have nothing yet (a PLAY
// right after SETUP): the extent's reads wait for its first bytes.
func (s *aheadSource) extentStart(v *store.View, npt float64) (int64, bool) {
	if s.n.ahead.max <= 0 || s.meta.Bitrate <= 0 || s.meta.Size <= 0 || v.Complete || v.Err != nil {
		return 0, false
	}
	est, _ := s.estimate(v, npt)
	start := s.startAt(v, npt)
	if !(est < float64(s.meta.Size)) || start-v.Index.Size < aheadGap(s.meta.Bitrate) {
		return 0, false
	}
	return start, true
}

// startLocked starts an extent from start for a play from npt.
func (s *aheadSource) startLocked(start int64, npt float64, tries int) {
	s.seq++
	ctx, cancel := context.WithCancel(context.Background())
	e := &aheadExtent{start: start, target: npt, tries: tries, seq: s.seq, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), b: tsindex.NewBuilderAt(start), end: start, moved: make(chan struct{}, 1)}
	e.read.Store(start)
	s.ext = e
	s.n.log.Info("RTSP play far ahead of the title's fill: its part read from the origin", "title", s.meta.ID, "npt", npt, "offset", start, "filled", s.title().View().Index.Size)
	go s.run(e)
}

// dropLocked ends the extent, if any, and returns the waiters to wake.
func (s *aheadSource) dropLocked() []func() {
	if s.ext == nil {
		return nil
	}
	s.ext.cancel()
	s.ext = nil
	return s.wakeLocked(true)
}

// drop ends the extent (trick play, which the fill's index serves).
func (s *aheadSource) drop() {
	s.mu.Lock()
	due := s.dropLocked()
	s.mu.Unlock()
	callAll(due)
}

// close ends the extent for good (the session ended) and waits for its
// reads to stop writing.
func (s *aheadSource) close() {
	s.mu.Lock()
	s.closed = true
	e := s.ext
	due := s.dropLocked()
	s.mu.Unlock()
	callAll(due)
	if e != nil {
		<-e.done
	}
}

// errExtentRestarted ends an extent's read when it started after the
// keyframe of its time.
var errExtentRestarted = errors.New("extent started again earlier")

// run reads e's bytes from the origin until the fill has them all, e is
// dropped, or it gives up (see restart).
func (s *aheadSource) run(e *aheadExtent) {
	defer close(e.done)
	defer e.cancel()
	t := s.title() // the copy e reads for: a refill drops e (refilled)
	var step time.Duration
	fill := fillWaiter{t: t}
	buf := make([]byte, 64<<10)
	bps := float64(s.meta.Bitrate) / 8
	bound := max(int64(originAheadMax.Seconds()*bps), originAheadMaxMin)
	bound -= bound % deliver.TSPacketSize
	for e.ctx.Err() == nil {
		s.mu.Lock()
		end := e.end
		settled := e.settled
		s.mu.Unlock()
		v := t.View()
		if v.Complete || v.Err != nil || v.Index.Size >= end || end >= s.meta.Size {
			s.finished(e)
			return
		}
		if !headKnown(&v.Index) || !t.AheadWritable() {
			// A PLAY right after SETUP: the fill has not indexed the
			// title's first PCRs, PMT and picture (the extent's clock is
			// placed on them) or receives no origin bytes yet.
			select {
			case <-fill.past(v.Index.Size):
			case <-e.ctx.Done():
			}
			continue
		}
		if settled && end-e.read.Load() > bound {
			// Far enough ahead of the play: wait for it to come closer,
			// or for the fill to pass what was read.
			select {
			case <-e.moved:
			case <-fill.past(end - 1):
			case <-e.ctx.Done():
			}
			continue
		}
		sl, newer := s.n.ahead.take(s, e.seq)
		if newer {
			return // a later extent of this session holds a read
		}
		if sl == nil {
			step = s.retryWait(e, step, true, fill.past(end-1))
			continue
		}
		rng, err := s.n.store.OriginRange(e.ctx, t, end, min(bound, s.meta.Size-end))
		if err != nil {
			s.n.ahead.release(sl)
			s.n.log.Debug("RTSP play far ahead of the fill: origin read refused; it asks again", "title", s.meta.ID, "offset", end, "err", err)
			step = s.retryWait(e, step, false, fill.past(end-1))
			continue
		}
		a := &aheadRead{rng: rng, slot: sl, slots: &s.n.ahead}
		if !s.n.ahead.opened(sl, a.close) {
			a.close()
			return
		}
		err = s.copyExtent(t, e, rng, end, buf)
		a.close()
		switch {
		case errors.Is(err, errExtentRestarted):
			return
		case err != nil && e.ctx.Err() == nil:
			s.n.log.Info("RTSP play far ahead of the fill: the origin's read ended (a fill took its channel, or the origin stalled); it asks again", "title", s.meta.ID, "err", err)
			step = s.retryWait(e, step, false, fill.past(end-1))
		case s.n.ahead.contended():
			step = s.retryWait(e, 0, false, fill.past(end-1)) // another range waits for a read: its turn
		default:
			step = 0
		}
	}
}

// copyExtent copies the bytes of rng, from off, into the file of t (the
// copy of the title e reads for) and e's index, waking the stream as they
// come. It returns nil at the read's
// end; errExtentRestarted when e started after the keyframe of its time
// (restart); the read's or the write's error.
func (s *aheadSource) copyExtent(t *store.Title, e *aheadExtent, rng *store.OriginRange, off int64, buf []byte) error {
	for {
		k, rerr := rng.Read(buf)
		if k > 0 {
			if err := t.WriteAhead(buf[:k], off); err != nil {
				return err
			}
			off += int64(k)
			restart, due := s.indexed(e, buf[:k])
			callAll(due)
			if restart {
				return errExtentRestarted
			}
			if v := t.View(); v.Complete || v.Err != nil || v.Index.Size >= off {
				return nil // the fill has them
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return nil
			}
			return rerr
		}
	}
}

// indexed indexes p, the extent's next bytes, and shows the extent once
// it holds the keyframe of its time. It reports whether e was started
// again (after that keyframe), and returns the waiters to wake.
func (s *aheadSource) indexed(e *aheadExtent, p []byte) (restart bool, due []func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ext != e {
		return false, nil
	}
	e.b.Write(p) // an error stops its indexing: the extent then shows no more
	e.end += int64(len(p))
	bi := e.b.Index()
	head := s.title().View().Index
	if !e.shifted {
		if len(bi.PCRs) == 0 {
			return false, nil
		}
		e.shiftTo(&head, s.meta.Bitrate)
		e.pcrs = append(e.pcrs, head.PCRs[:2]...)
		if s.reaimLocked(e, &head, bi.PCRs[0]) {
			return true, s.wakeLocked(true)
		}
	}
	for _, p := range bi.PCRs[len(e.pcrs)-2:] {
		e.pcrs = append(e.pcrs, tsindex.PCRPoint{Offset: p.Offset, PCR: p.PCR + e.pcrShift})
	}
	for _, k := range bi.Keyframes[len(e.kfs):] {
		if k.PTS >= 0 {
			if !e.ptsShifted {
				e.shiftPTS(&head, s.meta.Bitrate, k)
			}
			k.PTS += e.ptsShift
		}
		e.kfs = append(e.kfs, k)
	}
	e.idx = &tsindex.Index{Size: bi.Size, PCRPID: head.PCRPID, VideoPID: head.VideoPID, PMTPID: head.PMTPID,
		PCRs: e.pcrs, Keyframes: e.kfs, FirstPTS: head.FirstPTS}
	if !e.shown && len(e.kfs) > 0 {
		if first := e.idx.KeyframeSeconds(0); first > e.target {
			s.restartLocked(e, first)
			return true, s.wakeLocked(true)
		}
		e.shown = true
		s.n.log.Info("RTSP play far ahead of the title's fill: playing from the origin's bytes", "title", s.meta.ID, "npt", e.target, "keyframe_npt", e.idx.KeyframeSeconds(0), "offset", e.kfs[0].Offset)
	}
	if !e.shown {
		return false, nil
	}
	e.settled = e.settled || e.idx.KeyframeSeconds(len(e.kfs)-1) > e.target
	return false, s.wakeLocked(false)
}

// restartLocked starts the extent of e's play again earlier: its first
// keyframe is presented at first, after e.target, so it starts where
// the points of the title's clock place a time that much earlier than
// e.target (startAt, the margin before it), but not before the furthest
// point known to be the margin before e.target (earlyLocked) nor within
// the fill's gap. After the last try (rtspAheadTries), one more starts
// from that point when an extent placed it past the fill's gap. When there is no earlier
// place to start than e's, the play waits for the fill.
func (s *aheadSource) restartLocked(e *aheadExtent, first float64) {
	s.ext = nil
	v := s.title().View()
	early, read := s.earlyLocked(v, e.target)
	least := v.Index.Size + aheadGap(s.meta.Bitrate)
	least += (deliver.TSPacketSize - least%deliver.TSPacketSize) % deliver.TSPacketSize
	start := s.startAt(v, e.target-(first-e.target))
	if start >= e.start { // points out of order (a discontinuity): the mean bitrate
		start = e.start - int64((first-e.target+rtspAheadMargin.Seconds())*float64(s.meta.Bitrate)/8)
	}
	tries := e.tries + 1
	switch {
	case tries >= rtspAheadTries && read && e.tries < rtspAheadTries:
		start, tries = early, rtspAheadTries // one more: from a point known to be early
	case tries >= rtspAheadTries:
		start = e.start // none known past the fill, or that was the last
	}
	start = max(start, early, least)
	start -= start % deliver.TSPacketSize
	if start >= e.start {
		s.n.log.Info("RTSP play far ahead of the title's fill: no origin read starts before its time; it waits for the fill", "title", s.meta.ID, "npt", e.target)
		return
	}
	s.startLocked(start, e.target, tries)
}

// finished ends e's reads: once the fill has its bytes (or completed, or
// failed) the source gives the fill's index from then on; an extent read
// to the title's end is kept until the fill gets there (its play goes on
// to the end).
func (s *aheadSource) finished(e *aheadExtent) {
	s.mu.Lock()
	var due []func()
	if s.ext == e {
		if v := s.title().View(); v.Complete || v.Err != nil || v.Index.Size >= e.end {
			s.ext = nil
		}
		due = s.wakeLocked(true)
	}
	s.mu.Unlock()
	callAll(due)
}

// retryWait waits before e asks the origin again: step doubling from
// aheadRetry to aheadRetryMax, jittered; at once when a read of the node
// is given back and, with slot, it was refused one, or when fill is
// closed (the fill passed what e read). It returns the next step.
func (s *aheadSource) retryWait(e *aheadExtent, step time.Duration, slot bool, fill <-chan struct{}) time.Duration {
	wait, next := aheadBackoff(step)
	freed, done := s.n.ahead.wait(slot)
	defer done()
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-freed:
	case <-fill:
	case <-e.ctx.Done():
	}
	return next
}

// fillWaiter is one Title.Notify at a time for run's waits.
type fillWaiter struct {
	t  *store.Title
	at int64
	ch chan struct{}
}

// past returns a channel closed once the fill has more than at bytes, or
// completed or failed (registered once per at).
func (w *fillWaiter) past(at int64) <-chan struct{} {
	if w.ch == nil || w.at != at {
		ch := make(chan struct{})
		if !w.t.Notify(at, func() { close(ch) }) {
			close(ch)
		}
		w.ch, w.at = ch, at
	}
	return w.ch
}
