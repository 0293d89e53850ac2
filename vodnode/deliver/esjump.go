package deliver

import "vodcluster/cdp/tsindex"

// esJump is how far (90 kHz ticks) a track's timestamp may stray from
// where the stream clock (the PCR, continuous) at its read position puts
// it, before the play takes it for a discontinuity of the timestamps: a
// splice of two encodes, a broadcast recording across a programme change,
// a single bogus PES header. A multiplexer places an access unit at most
// 1 s before its decoding time (ISO/IEC 13818-1 §2.4.2.6), audio PES
// packets carry up to ~0.7 s of frames and are demultiplexed when the next
// one starts, so the tracks' timestamps stay within ~1.5 s of the clock
// (and of each other) in a continuous title: 3 s is well past that.
const esJump = 3 * tsindex.PTSHz

// esJumpMatch is how close (90 kHz ticks) the shift a track's jump calls
// for must be to the other track's for it to take that one exactly: the
// same jump in both tracks, seen at different read positions (audio sits
// up to ~0.7 s later in the file than the video of the same time), keeps
// the tracks' relation as the new encode has it.
const esJumpMatch = tsindex.PTSHz

// esTrackTime is how a play places one track's timestamps on its timeline.
type esTrackTime struct {
	set   bool
	last  int64 // the last timestamp placed, on the timeline (unwrapped 90 kHz ticks plus shift)
	delta int64 // ticks between the last two placed: the track's cadence
	lead  int64 // last less the stream clock (90 kHz ticks) where it was read
	shift int64 // ticks added to the track's unwrapped timestamps: the jumps absorbed so far
}

// place returns the shift (90 kHz ticks) that puts timestamp ts of track
// i (unwrapped, the DTS of a picture or the PTS of an audio frame), read
// where the stream clock is clock (90 kHz ticks), on the play's timeline.
// The timeline follows the timestamps while they keep with the clock; a
// timestamp more than esJump from where the clock puts it (compared with
// the track's last, or for a track's first with the other track's) is a
// jump, absorbed: the track goes on at its cadence (the last interval
// between its timestamps), or with the other track's shift when that one
// made the same jump (within esJumpMatch) and the track's timestamps
// still increase with it. So the RTP timestamps of each track run on
// without a gap, sent when due on one timeline with the clock that paces
// the reading: a jump forward no longer waits for a time the clock takes
// seconds to reach, nor one backward sends a burst of late packets.
func (p *esPlay) place(i int, ts, clock int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, o := &p.tt[i], p.otherLocked(i)
	lead := ts + t.shift - clock
	ref, ok := t.lead, t.set
	if !ok {
		ref, ok = o.lead, o.set
	}
	if d := lead - ref; ok && (d > esJump || d < -esJump) {
		shift := t.shift - d // where the clock puts it
		if t.set && t.delta > 0 && t.delta < esJump {
			shift = t.last + t.delta - ts // at the track's cadence
		}
		if o.set && abs64(o.shift-shift) <= esJumpMatch && (!t.set || ts+o.shift > t.last) {
			shift = o.shift // the other track's jump: the tracks stay in step
		}
		t.shift = shift
		lead = ts + shift - clock
		p.jumps++
	} else if t.set {
		t.delta = ts + t.shift - t.last
	}
	t.last, t.lead, t.set = ts+t.shift, lead, true
	return t.shift
}

// otherLocked returns the track time that track i's is compared with: the
// video's for an audio track; for the video, the first audio track's
// placed (the first audio track's before any). p.mu held.
func (p *esPlay) otherLocked(i int) *esTrackTime {
	if i != 0 {
		return &p.tt[0]
	}
	for j := 1; j < len(p.tt); j++ {
		if p.tt[j].set {
			return &p.tt[j]
		}
	}
	return &p.tt[1]
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
