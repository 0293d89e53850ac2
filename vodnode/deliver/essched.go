package deliver

import (
	"container/heap"
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
)

// esReadAhead is how far past the stream clock (the PCR) an
// elementary-stream play reads its title. A multiplexer may place an
// access unit up to 1 s before its decoding time (ISO/IEC 13818-1 §2.4.2.6,
// the T-STD's 1 s bound; ffmpeg's default -muxdelay is 0.7 s, and audio
// PES packets carry up to 0.7 s of frames), and audio usually less ahead
// than video: sent in file order, audio left up to ~0.7 s after the video
// of the same time. Reading 1 s ahead and sending each access unit at its
// own time leaves every one on time. The play's clock starts at the first
// picture, which sits that far before its time, so the audio is read only
// ~0.15 s before it is due: a reader stalled longer holds the pictures
// back rather than send them before that audio (awaitsAudioLocked).
const esReadAhead = time.Second

// esResync is how late an access unit may be read (a fill that fell
// behind, a stalled disk) before the play's clock moves on by that much:
// up to it, late units go out at once to catch up; past it, the timeline
// restarts from the late unit, as an MPEG-TS stream's does when its fill
// catches up.
const esResync = time.Second

// esLeadMax bounds how far ahead of its time audio is sent (esPlay.lead),
// 90 kHz ticks: H.264 reorders pictures by a few frames (200 ms for the
// sample titles' B-pyramid at 25 fps); a larger PTS − DTS is taken for a
// bogus timestamp.
const esLeadMax = tsindex.PTSHz / 2

// esUnit is one RTP packet of an elementary-stream track waiting for its
// send time.
type esUnit struct {
	track int
	due   int64  // 90 kHz ticks on the index's unwrapped scale (esPlay.unwrap): when it is sent; at, or earlier for audio (esPlay.lead)
	at    int64  // 90 kHz ticks, as due: its own time, DTS of its video access unit or PTS of its audio frame (a PLAY Range's end stops there)
	off   int64  // bytes: the reader's offset when its PES was demultiplexed
	shift int64  // 90 kHz ticks: the jumps of its track's timestamps absorbed (place), due included
	n     uint64 // push order: ties keep it
	pkt   *rtp.Packet
}

// esQueue is a min-heap of units by due time, then push order (a track's
// units are pushed in decoding order with non-decreasing due times, so
// each track leaves in its order).
type esQueue []*esUnit

func (q esQueue) Len() int { return len(q) }
func (q esQueue) Less(i, j int) bool {
	if q[i].due != q[j].due {
		return q[i].due < q[j].due
	}
	return q[i].n < q[j].n
}
func (q esQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *esQueue) Push(x any)   { *q = append(*q, x.(*esUnit)) }
func (q *esQueue) Pop() any {
	old := *q
	u := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return u
}

// esPlay is one play (Resume to stop) of an ESStream: the demultiplexer
// pushes the RTP packets of each access unit with its decoding time, and
// the sender sends each when the play's clock reaches it. The clock is
// set by the first unit pushed: its time is sent at once, every other
// unit its media time later, so that both tracks leave on one timeline
// whatever their order in the file. Jumps of the timestamps are absorbed
// into that timeline (place).
type esPlay struct {
	mu     sync.Mutex
	q      esQueue
	pushed uint64
	wake   chan struct{}
	ended  bool // the demultiplexer is done: the queue drains and the sender returns

	td    mpegts.TimeDecoder // unwraps the 33-bit timestamps of every track
	hint  int64              // 90 kHz ticks on the index's scale, about where the play starts; < 0: none
	based bool
	base  int64 // what the first raw timestamp decoded is on the index's scale (the decoder's 0)

	clockSet   bool
	clockWall  time.Time // when media time clockMedia is due
	clockMedia int64     // 90 kHz ticks on the index's unwrapped scale

	tt    []esTrackTime // per track: its timestamps' place on the timeline
	jumps int           // timestamp jumps absorbed

	// lead is how far ahead of its PTS each audio frame is sent (90 kHz
	// ticks): the largest reorder delay (PTS − DTS) of the pictures read
	// so far, at most esLeadMax. A picture is sent at its DTS, up to
	// that delay before its RTP timestamp (its PTS); sent at its PTS,
	// audio came that much later against its timestamps than video, and
	// a receiver that times each track by its arrivals (GStreamer's
	// rtpjitterbuffer in its default mode, slave, which keeps the
	// earliest arrival against the timestamps) played it that much late
	// (130 to 175 ms for the sample titles, TestGStreamerESLipSync). Sent as far ahead as the video, it
	// plays in sync; a player that times the tracks by their timestamps
	// and the sender reports (ffmpeg; rtspsrc's other modes) only holds
	// it that much longer. The timeline, and the sender reports that
	// map it, stay as they are.
	lead int64
	last []int64 // per track: the due of the last unit pushed (a track's units leave in their order)
	has  []bool  // per track: a unit was pushed

	// restarted is set when the timeline restarts (a unit read more than
	// esResync late: after a wait for the fill): the sender reports made
	// before map the wall clock to the old one, so the next packets send
	// a report each (sendUnit takes it).
	restarted atomic.Bool

	sentOff   int64     // offset of the last unit sent; -1 before the first
	sentShift int64     // shift of the last unit sent (a stop, on the stream's own PTS, is placed by it: nextShiftLocked)
	sentWall  time.Time // when the last unit was sent
	sentDue   int64     // due of the last unit sent, on the timeline (shift included); math.MinInt64 before the first

	// A picture due while the reader is stalled (a slow disk, a loaded
	// machine) waits for the audio due before it that is not read yet
	// (awaitsAudioLocked): the audio sits in the file up to ~0.7 s after
	// the video of its time and goes out lead ahead of it, so it is read
	// only ~0.15 s before it is due (the pictures ~1 s), and a stall
	// longer than that sent pictures before the audio of earlier times
	// (a 0.7 s stall: up to 0.34 s later ones). Holding the pictures
	// keeps the tracks in order at no cost in memory (reading further
	// ahead would queue a second more of video per session).
	readerOnTime time.Time // the reader had read all that was due by then (readerIdle)
	readerFill   bool      // the reader waits for the title's fill: it has read all there is
	audioSet     []bool    // per track: its audio was read (audioRead)
	audioEnd     []int64   // per track: the end of its audio frames read, on the timeline (unwrapped 90 kHz ticks plus shift)
	awaitReader  bool      // the sender waits for the reader or the audio: readerIdle wakes it

	// from, when fromSet for a track, is where a play of a title without
	// video starts (PTS on the index's scale): the track's audio that
	// ends before it, read from the second before it, is not sent
	// (skipEarly).
	fromSet []bool
	from    int64

	// stop, when stopSet, is where the play holds itself (a PLAY Range's
	// end): the PTS on the index's scale (unshifted) that no unit sent
	// reaches; cleared when reached.
	stopSet bool
	stop    int64
	// beyond are units past the stop set aside while units before it,
	// read before them, are still queued (setAsideLocked); beyondN is
	// the latest push order of them.
	beyond  []*esUnit
	beyondN uint64

	// A PAUSE holds the play: nothing is read or sent, the queue and the
	// demultiplexer's state are kept, and the release moves the clock on
	// by the pause, so that a PLAY goes on from the next packet exactly.
	held     bool
	heldAt   time.Time
	released chan struct{} // closed by release
	paused   time.Duration // the holds released so far, in all (the reader's pacing moves on by them)
	seen     time.Duration // of paused, what the reader has seen
}

func newESPlay() *esPlay { return newESPlayN(2) }

// newESPlayN returns a play of n tracks (video, then each audio track).
func newESPlayN(n int) *esPlay {
	return &esPlay{wake: make(chan struct{}, 1), sentOff: -1, sentDue: math.MinInt64, hint: -1,
		tt: make([]esTrackTime, n), last: make([]int64, n), has: make([]bool, n),
		audioSet: make([]bool, n), audioEnd: make([]int64, n), fromSet: make([]bool, n)}
}

// hold pauses the play at now (a PAUSE), or where its clock stands
// (notPastStopLocked): the sender sends nothing more, the reader reads
// nothing more, until release.
func (p *esPlay) hold(now time.Time) {
	p.mu.Lock()
	p.holdLocked(p.notPastStopLocked(now))
	p.mu.Unlock()
	p.signal()
}

// holdLocked holds the play from at on (its clock stands still there);
// p.mu held.
func (p *esPlay) holdLocked(at time.Time) {
	if !p.held {
		p.held, p.heldAt, p.released = true, at, make(chan struct{})
	}
}

// release ends a hold at now: the clock moves on by the pause, so every
// packet queued or to come is due as long after now as it was after the
// hold. It reports whether the play was held.
func (p *esPlay) release(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		return false
	}
	d := max(now.Sub(p.heldAt), 0)
	if p.clockSet {
		p.clockWall = p.clockWall.Add(d)
	}
	if !p.readerOnTime.IsZero() {
		p.readerOnTime = p.readerOnTime.Add(d) // the reader's pacing moves on by the pause too
	}
	p.held = false
	p.paused += d
	close(p.released)
	return true
}

// waitHeld blocks while the play is held (pacedReader.hold): it returns
// how long the holds released since its last call held the play's clock,
// or ctx's error.
func (p *esPlay) waitHeld(ctx context.Context) (time.Duration, error) {
	for {
		p.mu.Lock()
		if !p.held {
			d := p.paused - p.seen
			p.seen = p.paused
			p.mu.Unlock()
			return d, nil
		}
		ch := p.released
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// readerIdle tells the play that its reader has read all that is due
// until wall time until (it waits: pacedReader.idle), or, with fill, all
// there is (it waits for the title's fill, which holds no picture back:
// what was read still goes out on time).
func (p *esPlay) readerIdle(until time.Time, fill bool) {
	p.mu.Lock()
	p.readerOnTime, p.readerFill = until, fill
	wake := p.awaitReader
	p.mu.Unlock()
	if wake {
		p.signal()
	}
}

// audioRead tells the play that the audio frames of track i up to end
// (on the timeline: unwrapped 90 kHz ticks plus shift) were read and
// queued.
func (p *esPlay) audioRead(i int, end int64) {
	p.mu.Lock()
	p.audioSet[i], p.audioEnd[i] = true, end
	wake := p.awaitReader
	p.mu.Unlock()
	if wake {
		p.signal()
	}
}

// setFrom makes the play drop the audio that ends at or before pts (90
// kHz ticks on the index's unwrapped scale), until a packet reaching
// past it is sent (skipEarly).
func (p *esPlay) setFrom(pts int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.from = pts
	for i := range p.fromSet {
		p.fromSet[i] = true
	}
}

// skipEarly returns the audio packets pkts of track i, of frames from
// start to end (90 kHz ticks on the index's unwrapped scale; each packet
// stamped from 0 at rate Hz by the encoder) less those whose frames end
// at or before the play's start (setFrom), which is cleared for the track
// once a packet of it is kept.
func (p *esPlay) skipEarly(i int, start, end, rate int64, pkts []*rtp.Packet) []*rtp.Packet {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.fromSet[i] {
		return pkts
	}
	for j := range pkts {
		e := end
		if j+1 < len(pkts) {
			e = start + int64(pkts[j+1].Timestamp)*tsindex.PTSHz/rate
		}
		if e > p.from {
			p.fromSet[i] = false
			return pkts[j:]
		}
	}
	return nil
}

// setHint tells the play the PTS (90 kHz ticks, unwrapped as the title's
// index unwraps them: tsindex.Keyframe.PTS) of about where it starts,
// before the first timestamp is unwrapped.
func (p *esPlay) setHint(pts int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hint = pts
}

// setJump starts every track's shift at j (90 kHz ticks): the jump of
// the presentation times the title's index absorbed before where the
// play starts (tsindex.Index.JumpAt), so that the play's timeline, its
// RTP timestamps among them, is the index's continuous one, as npt and
// RTP-Info's rtptime are (tsindex.Keyframe.Time). Before the first unit.
func (p *esPlay) setJump(j int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.tt {
		p.tt[i].shift = j
	}
}

// unwrap returns the raw 33-bit 90 kHz timestamp ts of either track on
// the scale of the title's index (PTS unwrapped across the 33-bit wrap
// from the title's first): the first timestamp is put on it nearest to
// the hint (setHint), the others follow it continuously. Then the RTP
// timestamps of a play that crosses the wrap, or starts after it, agree
// with RTP-Info's (taken from the index) and with its sender reports,
// and its position counts from the title's first picture; the audio
// clock, unlike the 90 kHz one, is not a divisor of 2^33.
func (p *esPlay) unwrap(ts int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.based {
		p.based, p.base = true, ts
		if p.hint >= 0 {
			const wrap = int64(1) << 33
			p.base += (p.hint - ts + wrap/2) / wrap * wrap // the nearest to hint
			if p.base-p.hint > wrap/2 {
				p.base -= wrap
			}
		}
	}
	return p.base + p.td.Decode(ts)
}

// noteReorder records the reorder delay d (PTS − DTS, 90 kHz ticks) of a
// picture read: audio is sent as far ahead of its time as the largest
// (lead).
func (p *esPlay) noteReorder(d int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d > p.lead {
		p.lead = min(d, esLeadMax)
	}
}

// push queues the packets of one access unit of track, packet i of media
// time ats[i] (unwrapped 90 kHz ticks plus shift, the track's place: a
// picture's DTS, an audio frame's PTS), read at byte off of the title.
// A picture is due at its time, audio lead before it (never before the
// track's last unit). The first unit pushed sets the clock; a unit read
// more than esResync after its time moves the clock on by its lateness.
func (p *esPlay) push(track int, off, shift int64, pkts []*rtp.Packet, ats []int64) {
	if len(pkts) == 0 {
		return
	}
	now := time.Now()
	p.mu.Lock()
	var lead int64
	if track >= 1 { // audio
		lead = p.lead
	}
	due := func(i int) int64 {
		d := ats[i] - lead
		if p.has[track] {
			d = max(d, p.last[track])
		}
		p.last[track], p.has[track] = d, true
		return d
	}
	if !p.clockSet {
		p.clockSet, p.clockWall, p.clockMedia = true, now, ats[0]-lead
	} else if late := now.Sub(p.wallOfLocked(ats[0])); late > esResync && !p.held {
		p.clockWall = p.clockWall.Add(late) // read that late: the timeline restarts here
		p.restarted.Store(true)
	}
	for i, pkt := range pkts {
		heap.Push(&p.q, &esUnit{track: track, due: due(i), at: ats[i], off: off, shift: shift, n: p.pushed, pkt: pkt})
		p.pushed++
	}
	p.mu.Unlock()
	p.signal()
}

func (p *esPlay) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// finish tells the sender nothing more comes: it sends what is queued,
// then returns.
func (p *esPlay) finish() {
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	p.signal()
}

// wallOfLocked returns when media time m (unwrapped 90 kHz ticks) is due.
func (p *esPlay) wallOfLocked(m int64) time.Time {
	return p.clockWall.Add(time.Duration(m-p.clockMedia) * time.Second / 90000)
}

// mediaNow returns the 90 kHz timestamp due now on the index's unwrapped
// scale (what an RTCP sender report maps to the wall clock), and false
// before the clock is set.
func (p *esPlay) mediaNow(now time.Time) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.clockSet {
		return 0, false
	}
	if p.held {
		now = p.heldAt // the clock stands still while held
	} else {
		now = p.notPastStopLocked(now)
	}
	return p.clockMedia + int64(now.Sub(p.clockWall))*90000/int64(time.Second), true
}

// reportNow is mediaNow for a sender report: while the play waits for
// the title's fill (waiting) and has sent all it read, its clock is taken
// to stand at the last unit read, as if held there, rather than to run on
// past any packet sent (what is read next, late, restarts the timeline
// about there: push), so that the reports do not run ahead of the
// packets (GStreamer's jitterbuffer ignores a report more than its
// max-rtcp-rtp-time-diff, 1 s, ahead of the last packet).
func (p *esPlay) reportNow(now time.Time, waiting bool) (int64, bool) {
	m, ok := p.mediaNow(now)
	if !ok || !waiting {
		return m, ok
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last := int64(math.MinInt64)
	for t, has := range p.has {
		if has {
			last = max(last, p.last[t])
		}
	}
	if last != math.MinInt64 {
		m = min(m, last)
	}
	return m, ok
}

// lastSentOffset returns the offset of the last unit sent, or -1.
func (p *esPlay) lastSentOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sentOff
}

// sendLoop sends each queued unit with send when it is due, until the
// queue is empty after finish (nil), ctx ends (its error) or send fails
// (its error). It holds the play when its clock reaches the stop
// (setStop), at the stop's time.
func (p *esPlay) sendLoop(ctx context.Context, send func(*esUnit) error) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		p.mu.Lock()
		if p.held {
			ch := p.released
			p.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if len(p.q) == 0 && len(p.beyond) > 0 {
			p.restoreLocked() // nothing before the stop left
			p.mu.Unlock()
			continue
		}
		if len(p.q) == 0 {
			ended := p.ended
			p.mu.Unlock()
			if ended {
				return nil
			}
			select {
			case <-p.wake:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		u := p.q[0]
		if p.stopSet && u.at-u.shift >= p.stop && u.due-u.shift < p.stop {
			// Audio sent ahead whose time is at or past the stop: it
			// waits for the stop, not holding back what is due before.
			heap.Pop(&p.q)
			u.due = p.stop + u.shift
			heap.Push(&p.q, u)
			p.mu.Unlock()
			continue
		}
		at, stop := p.wallOfLocked(u.due), p.stopSet && u.due-u.shift >= p.stop
		if stop && p.setAsideLocked(u) {
			p.mu.Unlock()
			continue
		}
		if stop {
			at = p.stopWallLocked(u.shift)
		}
		if wait := time.Until(at); wait > 0 {
			p.mu.Unlock()
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-p.wake: // an earlier unit may have come
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if stop {
			p.stopSet = false
			p.restoreLocked()
			p.holdLocked(at) // its clock stands at the stop
			p.mu.Unlock()
			continue
		}
		if wait := time.Until(at.Add(esResync)); wait > 0 && p.awaitsAudioLocked(u, at) {
			// A stalled reader: the picture waits for the audio due
			// before it, or the reader's pace, up to esResync late.
			p.awaitReader = true
			p.mu.Unlock()
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-p.wake: // audio read, the reader on time, or an earlier unit
			case <-ctx.Done():
				return ctx.Err()
			}
			p.mu.Lock()
			p.awaitReader = false
			p.mu.Unlock()
			continue
		}
		heap.Pop(&p.q)
		p.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := send(u); err != nil {
			return err
		}
		p.mu.Lock()
		p.sentOff, p.sentShift, p.sentWall, p.sentDue = u.off, u.shift, time.Now(), u.due
		p.mu.Unlock()
	}
}
