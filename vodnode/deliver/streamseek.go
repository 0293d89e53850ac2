package deliver

import (
	"fmt"
	"math"

	"vodcluster/cdp/tsindex"
)

// Where a play starts and stops: a seek to a Range's start and its
// RTP-Info, and the stop at a Range's end.

// Seek stops sending (a playing stream is paused) and, for npt >= 0, moves
// to the keyframe presented at or before npt seconds of normal play time
// (the presentation time from the title's first picture; into a part
// still filling: to that keyframe once the fill has indexed one presented
// after npt (seekSettled), the
// stream waiting until then, and the position returned is npt itself,
// with the RTP timestamp of npt on the stream's clock, seekRTPTime, which
// the packets from the keyframe on agree with, startAsAnswered); npt < 0
// keeps the position (or such a seek not started yet). It returns the
// position (npt) and the RTP sequence number and timestamp the stream
// will go on with. Errors: ErrRange when npt is at or past the end of a
// complete title, ErrEnded, or the fill's error.
func (s *Stream) Seek(npt float64) (PlayInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateEnded {
		return PlayInfo{}, ErrEnded
	}
	idx, complete, err := s.cfg.Source.State()
	if err != nil {
		return PlayInfo{}, err
	}
	ck := s.clock(idx, complete)
	info := PlayInfo{Seq: s.seq, RTPTime: s.cfg.TSBase, NPT: max(npt, 0)}
	seekNPT, estimated := -1.0, false
	if npt >= 0 {
		var off int64
		var at float64
		off, at, estimated, err = s.seekOffset(idx, complete, ck, npt)
		if err != nil {
			return PlayInfo{}, err
		}
		s.pos, seekNPT = off, at
		s.seekTo, s.tsAdjust = -1, 0
		if estimated {
			s.seekTo = npt
		}
		s.kf = -1
		s.trickFree = 0 // a new play: the trick play's budget counts from its first picture
		s.injectPSI = off > 0
	}
	// A PLAY's seek: the end-of-title BYE of the play before, not sent
	// yet, is not sent now; it would follow this PLAY's response and end
	// the client's new play (RFC 3550 §6.6).
	s.bye.cancel()
	if s.state == statePlaying {
		s.state = statePaused
	}
	if ck.ok() {
		s.setClock0(ck)
		info.RTPTime = s.rtpTime(ck, s.pos)
		info.NPT = ck.npt(s.pos)
		if seekNPT >= 0 {
			info.NPT = seekNPT
		}
	}
	switch {
	case estimated:
		info.RTPTime = s.seekRTPTime(ck, idx.Size, npt)
		s.seekRTP = info.RTPTime
	case s.seekTo >= 0:
		// A play on (npt < 0) before such a seek has started: it still
		// starts as that one was answered.
		info.RTPTime, info.NPT = s.seekRTP, s.seekTo
	}
	return info, nil
}

// seekRTPTime returns the RTP timestamp of npt seconds in the part of the
// title not filled yet: that of the end of the bytes indexed (size), or
// the stream's first when no clock is known yet, moved on by the time from
// there to npt (RFC 2326 §12.33: RTP-Info's rtptime is the timestamp of
// the Range's npt). The clock at the offset the bitrate gives for npt
// would be extrapolated across the unfilled bytes from the last two PCRs,
// seconds off when the title's bitrate is not the one announced, and the
// stream starts elsewhere anyway (at npt's keyframe, once indexed, whose
// packets startAsAnswered stamps to agree with this answer).
func (s *Stream) seekRTPTime(ck clockOf, size int64, npt float64) uint32 {
	base, from := s.cfg.TSBase, 0.0
	if ck.ok() {
		base, from = s.rtpTime(ck, size), ck.npt(size)
	}
	return base + uint32(int64(math.Round((npt-from)*90000)))
}

// seekOffset returns where a play from npt seconds starts and its npt:
// the keyframe presented at or before npt; into a part still filling
// where that keyframe is not known yet (seekSettled), the offset the
// bitrate gives (estimated true: step moves it to the keyframe once it
// is).
func (s *Stream) seekOffset(idx *tsindex.Index, complete bool, ck clockOf, npt float64) (off int64, at float64, estimated bool, err error) {
	if npt == 0 {
		return 0, 0, false, nil
	}
	if complete && ck.ok() && npt >= ck.npt(idx.Size) {
		// The duration a client was told (the SDP's a=range) counts the
		// last frames past the last clock reference: a start up to a
		// second beyond it plays from the last keyframe.
		if npt < ck.npt(idx.Size)+endSlack {
			if off, at := ck.keyframeBefore(npt); off >= 0 {
				return off, at, false, nil
			}
			if len(idx.Keyframes) == 0 { // no video: from npt by the clock (as below), at most the end
				off := min(ck.offset(ck.at(0)+int64(npt*tsindex.PCRHz)), idx.Size)
				return off - off%TSPacketSize, ck.npt(off - off%TSPacketSize), false, nil
			}
		}
		return 0, 0, false, ErrRange
	}
	if complete || ck.seekSettled(npt) {
		if !ck.ok() {
			return 0, 0, false, nil
		}
		if off, at := ck.keyframeBefore(npt); off >= 0 {
			return off, at, false, nil
		}
		off = ck.offset(ck.at(0) + int64(npt*tsindex.PCRHz))
		off = max(off-off%TSPacketSize, 0)
		return off, ck.npt(off), false, nil
	}
	if s.cfg.Bitrate <= 0 {
		return 0, 0, false, fmt.Errorf("%w: no bitrate to seek into the unfilled part", ErrRange)
	}
	f := npt * float64(s.cfg.Bitrate) / 8
	if !(f < 1<<53) { // past any title (and past int64 for a huge npt)
		return 0, 0, false, fmt.Errorf("%w: %.0f s is past the end", ErrRange, npt)
	}
	o := int64(f)
	return o - o%TSPacketSize, npt, true, nil
}

// endSlack is how far past a complete title's last clock reference a
// seek still plays (from the last keyframe), seconds.
const endSlack = 1.0

// SetStop makes normal play pause when it reaches npt seconds (the end of
// a PLAY request's Range, RFC 2326 12.29); npt < 0 clears it. The stop
// is cleared when reached; trick play ignores it.
func (s *Stream) SetStop(npt float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopNPT = npt
}

// stopOffset returns the offset at which normal play pauses (the first
// TS packet at or past stopNPT), -1 when none.
func (s *Stream) stopOffset(ck clockOf) int64 {
	return stopOffsetAt(ck, s.stopNPT)
}

// stopOffsetAt returns the offset of the first TS packet at or past npt
// seconds (clockOf.npt: from the first picture, as every npt answered),
// -1 when npt < 0: the stream clock there is npt less how much later than
// it is sent the last keyframe presented at or before npt is presented
// (the mux's delay, which varies along a title: taken as none, the clock
// alone stopped plays up to 0.2 s short in the sample titles).
func stopOffsetAt(ck clockOf, npt float64) int64 {
	if npt < 0 {
		return -1
	}
	clock := npt
	if off, at := ck.keyframeBefore(npt); off >= 0 {
		clock -= at - ck.seconds(off)
	}
	off := ck.offset(ck.at(0) + int64(math.Round(clock*tsindex.PCRHz)))
	return (max(off, 0) + TSPacketSize - 1) / TSPacketSize * TSPacketSize
}
