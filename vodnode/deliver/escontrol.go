package deliver

import (
	"math"
	"time"

	"vodcluster/cdp/tsindex"
)

// goOn returns the sequence numbers and RTP timestamps a play under way
// (held by a PAUSE, or playing) goes on with, and false when there is
// none: a PLAY without Range keeps it rather than starting anew.
func (s *ESStream) goOn() ([]PlayInfo, bool) {
	info := make([]PlayInfo, len(s.tc))
	s.mu.Lock()
	play, running := s.play, s.cancel != nil
	s.mu.Unlock()
	if !running || play == nil {
		return info, false
	}
	m, ok := play.mediaNow(time.Now())
	if !ok {
		return info, false // nothing read yet: started anew where it was
	}
	npt := s.Position()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range info {
		info[i] = PlayInfo{Seq: s.seq[i], RTPTime: s.rtpTime(i, m), NPT: npt}
	}
	return info, true
}

// Pause stops sending and returns the position, seconds. A play under
// way is held (its queue and demultiplexer kept): a Resume, or a Seek
// that keeps the position, goes on from the next packet, nothing skipped.
func (s *ESStream) Pause() float64 {
	s.mu.Lock()
	play := s.play
	if s.cancel != nil && play != nil {
		play.hold(time.Now())
		s.mu.Unlock()
		return s.Position()
	}
	s.mu.Unlock()
	s.stop()
	return s.Position()
}

// SetStop makes the play under way, or else the next play (Resume), pause
// when its clock reaches npt seconds (the end of a PLAY request's Range,
// RFC 2326 §12.29): every packet due before it (a picture at its DTS, an
// audio frame at its PTS) is sent, then nothing, and the play is held as
// a PAUSE holds it, its position npt: a Resume goes on from the next
// packet of each track. npt < 0 clears it; it is cleared when reached.
func (s *ESStream) SetStop(npt float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopNPT = npt
	if s.play == nil {
		return // the next play takes it
	}
	if npt < 0 {
		s.play.setStop(0, false)
		return
	}
	idx, _, _ := s.cfg.Source.State()
	s.armStopLocked(idx)
}

// armStopLocked hands the stop asked (stopNPT) to the play under way once
// npt's origin (nptOrigin) is known; s.mu held.
func (s *ESStream) armStopLocked(idx *tsindex.Index) {
	origin, ok := s.nptOrigin(idx)
	if s.stopNPT < 0 || s.play == nil || !ok {
		return
	}
	// The stop is on the index's unwrapped scale, the stream's own PTS:
	// npt's time less the jumps the index absorbed up to it.
	stop := origin + int64(math.Round(s.stopNPT*tsindex.PTSHz))
	s.play.setStop(stop-idx.JumpAtTime(stop), true)
	s.stopNPT = -1
}

// nptOrigin returns the PTS of npt 0 (90 kHz ticks on the index's
// unwrapped scale), false while it is not known. npt counts presentation
// time from the title's first picture (the index's FirstPTS). A title
// without video has no picture: its npt 0 is the system time clock at its
// first byte (the PCR extrapolated there, in 90 kHz units; PTS and PCR
// count the same clock, ISO/IEC 13818-1 §2.4.2), as the index counts its
// npt and its duration (tsindex.Index.Seconds, Duration) and MP2T mode
// seeks it, so that a Range means the same time in both modes.
func (s *ESStream) nptOrigin(idx *tsindex.Index) (int64, bool) {
	if idx.FirstPTS >= 0 {
		return idx.FirstPTS, true
	}
	if s.audioOnly(idx) {
		return clockOf{idx: idx}.at(0) / 300, true
	}
	return 0, false
}

// audioOnly reports whether the title has no video to count npt from: no
// H.264 track and no picture indexed, its clock known (two PCRs).
func (s *ESStream) audioOnly(idx *tsindex.Index) bool {
	return s.cfg.Tracks.Video == nil && idx.FirstPTS < 0 && idx.VideoPID == 0 && len(idx.PCRs) >= 2
}

// AtEnd reports whether the stream waits at the end of its title, where
// its play ended (EndOfTitle, BYE sent) and no Seek has moved it since: a
// play from there has nothing to send.
func (s *ESStream) AtEnd() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.cancel != nil || s.seekTo >= 0 {
		return false
	}
	idx, complete, err := s.cfg.Source.State()
	return err == nil && complete && idx.Size > 0 && s.pos >= idx.Size
}

// armStop is armStopLocked for play from its demultiplexer: a stop asked
// before the title's first PTS was indexed.
func (s *ESStream) armStop(play *esPlay) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopNPT < 0 || s.play != play {
		return
	}
	idx, _, _ := s.cfg.Source.State()
	s.armStopLocked(idx)
}

// Position returns the play position, seconds of npt (presentation time
// from the title's first picture): while playing (or held), the time due
// now on the play's timeline, which is the index's continuous one (npt,
// as a PLAY's Range takes it: tsindex.Keyframe.Time): it starts there
// (esPlay.setJump) and absorbs the jumps of the title's timestamps it
// meets; otherwise where the next play starts.
func (s *ESStream) Position() float64 {
	s.mu.Lock()
	play, seekTo := s.play, s.seekTo
	s.mu.Unlock()
	if play != nil {
		idx, _, _ := s.cfg.Source.State()
		origin, known := s.nptOrigin(idx)
		if m, ok := play.mediaNow(time.Now()); ok && known {
			return max(float64(m-origin)/tsindex.PTSHz, 0)
		}
	}
	if seekTo >= 0 {
		return seekTo // not started there yet
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, complete, _ := s.cfg.Source.State()
	ck := clockOf{idx: idx}
	if complete {
		ck.bitrate = s.cfg.Bitrate
	}
	if !ck.ok() {
		return 0
	}
	return ck.npt(s.pos)
}
