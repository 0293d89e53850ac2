package deliver

import (
	"context"
	"fmt"
	"math"

	"vodcluster/cdp/tsindex"
)

// Seek is SeekTracks for the video and the first audio track (index 0
// and 1), the tracks of a title with one AAC track.
func (s *ESStream) Seek(npt float64) ([2]PlayInfo, error) {
	info, err := s.SeekTracks(npt)
	var out [2]PlayInfo
	copy(out[:], info)
	return out, err
}

// SeekTracks stops the stream (a playing one pauses) and, for npt >= 0, moves to
// the keyframe at or before npt seconds (a title without video: to npt
// itself, startOffset; into the part of the title not indexed yet: there
// once the fill has indexed it (seekSettled), the answer giving npt itself and its RTP
// timestamp); npt < 0 keeps the position (a play paused, or playing, goes
// on where it is, with the packets it had read). It returns, per track,
// the sequence number and RTP timestamp the stream will go on with (index
// 0 the video, 1+k the AAC track k, set up or not).
// Errors: ErrRange past the end of a complete title (or too far to count),
// the stream left as it was; ErrEnded; the fill's error (Source.State).
func (s *ESStream) SeekTracks(npt float64) ([]PlayInfo, error) {
	if npt < 0 {
		if info, ok := s.goOn(); ok {
			return info, nil
		}
	}
	info := make([]PlayInfo, len(s.tc))
	// A start refused changes nothing: checked before the play stops.
	idx, complete, err := s.cfg.Source.State()
	if err != nil {
		return info, err
	}
	ck := clockOf{idx: idx, bitrate: s.cfg.Bitrate}
	if npt >= 0 {
		if complete && ck.ok() && npt >= ck.npt(idx.Size)+endSlack {
			return info, ErrRange // within endSlack: from the last keyframe, as Stream does
		}
		if !(npt*float64(max(s.cfg.Bitrate, 1)) < 1<<53) {
			return info, fmt.Errorf("%w: %.0f s is past the end", ErrRange, npt)
		}
	}
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return info, ErrEnded
	}
	idx, complete, err = s.cfg.Source.State()
	if err != nil {
		return info, err
	}
	// A PLAY's seek: the end-of-title BYE of the play before, not sent
	// yet, is not sent now; it would follow this PLAY's response and end
	// the client's new play (RFC 3550 §6.6).
	s.bye.cancel()
	ck = clockOf{idx: idx, bitrate: s.cfg.Bitrate}
	if npt >= 0 {
		s.pos, s.seekTo, s.fromNPT = 0, -1, -1
		switch {
		case npt <= 0:
		case !complete && !ck.seekSettled(npt):
			// Not indexed yet: the play starts at npt's keyframe once
			// the fill has indexed it (see Stream's seek).
			s.seekTo = npt
		default:
			s.pos = s.startOffset(ck, npt)
			if s.audioOnly(idx) {
				s.fromNPT = npt
			}
		}
	}
	origin, known := s.nptOrigin(idx)
	if s.fromNPT >= 0 {
		// A title without video plays from npt itself (startOffset).
		pts := origin + int64(math.Round(s.fromNPT*tsindex.PTSHz))
		for i := range info {
			info[i] = PlayInfo{Seq: s.seq[i], RTPTime: s.rtpTime(i, pts), NPT: s.fromNPT}
		}
		s.setStartTSLocked(info)
		return info, nil
	}
	if s.seekTo >= 0 {
		// RTP-Info's rtptime is that of the npt asked (RFC 2326 §12.33).
		pts := int64(math.Round(s.seekTo * tsindex.PTSHz))
		if known {
			pts += origin
		}
		for i := range info {
			info[i] = PlayInfo{Seq: s.seq[i], RTPTime: s.rtpTime(i, pts), NPT: s.seekTo}
		}
		s.setStartTSLocked(info)
		return info, nil
	}
	pts := int64(-1)
	for _, k := range idx.Keyframes {
		if k.Offset >= s.pos && k.PTS >= 0 {
			pts = k.Time() // the play's timeline is the index's (esPlay.setJump)
			break
		}
	}
	if pts < 0 {
		pts = 0
		if known && ck.ok() {
			// No picture from there (a title without video): the time
			// of its position.
			pts = origin + int64(math.Round(ck.npt(s.pos)*tsindex.PTSHz))
		}
	}
	for i := range info {
		info[i] = PlayInfo{Seq: s.seq[i], RTPTime: s.rtpTime(i, pts)}
		if ck.ok() {
			info[i].NPT = ck.npt(s.pos)
		}
	}
	s.setStartTSLocked(info)
	return info, nil
}

// startOffset returns where a play from npt seconds starts: the keyframe
// presented at or before npt; in a title without video, the TS packet
// where the clock is esReadAhead before npt (a multiplexer places an audio
// frame up to 1 s before its time, ISO/IEC 13818-1 §2.4.2.6: the frame
// presented at npt is after it), the play dropping the audio that ends
// before npt (fromNPT: an audio frame decodes on its own, so the play
// starts at npt itself, where from the packet at npt the first audio came
// up to the mux's delay later, 0.9 s for the sample titles); else the
// title's start.
func (s *ESStream) startOffset(ck clockOf, npt float64) int64 {
	if !ck.ok() {
		return 0
	}
	if off, _ := ck.keyframeBefore(npt); off >= 0 {
		return off
	}
	if s.audioOnly(ck.idx) {
		off := ck.offset(ck.at(0) + int64((npt-esReadAhead.Seconds())*tsindex.PCRHz))
		return max(off-off%TSPacketSize, 0)
	}
	return 0
}

// rtpTime converts a 90 kHz PTS to track i's RTP clock (an audio track's:
// its sample rate).
func (s *ESStream) rtpTime(i int, pts int64) uint32 {
	if f := s.audioFormat(i); f != nil {
		return s.tc[i].TSBase + uint32(pts*int64(f.ClockRate())/tsindex.PTSHz)
	}
	return s.tc[i].TSBase + uint32(pts)
}

// setStartTSLocked records the RTP timestamp each track's next play
// starts with, as Seek answered it; s.mu held.
func (s *ESStream) setStartTSLocked(info []PlayInfo) {
	for i := range s.startTS {
		s.startTS[i] = info[i].RTPTime
	}
}

// ptsNear returns the PTS (90 kHz ticks, unwrapped: the index's) of the
// last keyframe at or before offset off of src, else of its first
// picture; -1 when the index has none.
func ptsNear(src Source, off int64) int64 {
	idx, _, _ := src.State()
	pts := idx.FirstPTS
	for _, k := range idx.Keyframes {
		if k.Offset > off {
			break
		}
		if k.PTS >= 0 {
			pts = k.PTS
		}
	}
	return pts
}

// WaitingForFill reports whether the stream plays but waits for its
// title's fill: a seek into the part not indexed yet (which may take many
// session timeouts on a slow origin), or a read that caught up with the
// fill. It sends nothing new meanwhile (what was read before still goes
// out on time), so its client has nothing to answer with receiver
// reports.
func (s *ESStream) WaitingForFill() bool {
	s.mu.Lock()
	playing := s.cancel != nil
	s.mu.Unlock()
	return playing && s.fillWait.Load()
}

// seekIndexed waits until the fill has indexed npt seconds of the title
// with a keyframe presented after npt (seekSettled), or completed it,
// and moves rd, and the stream's position, to the
// keyframe presented at or before npt: a seek into the part of the title
// not indexed when it was asked. A fill that failed after indexing npt is
// played from there to where it stopped; one failed before npt is asked
// to be filled again (ESConfig.OnFillFailed), and waited for then.
// Errors: the fill's (failed before npt, and not filled again), ctx's.
func (s *ESStream) seekIndexed(ctx context.Context, rd *pacedReader, play *esPlay, npt float64, done chan struct{}) error {
	for {
		idx, complete, err := s.cfg.Source.State()
		ck := clockOf{idx: idx}
		if complete {
			ck.bitrate = s.cfg.Bitrate
		}
		indexed := ck.ok() && npt < ck.npt(idx.Size)
		if err != nil && !indexed {
			// The fill failed before npt: unless the title is filled
			// again (askRefill: then waited for as it indexes npt), the
			// play ends there.
			if ok, cerr := rd.askRefill(); cerr != nil {
				return cerr
			} else if ok {
				continue
			}
			return err
		}
		if complete || err != nil || ck.seekSettled(npt) {
			off := s.startOffset(ck, npt)
			rd.off = off
			if off > 0 {
				rd.prefix = ReadPSI(s.cfg.Source, idx)
			}
			s.mu.Lock()
			if s.done == done {
				s.pos, s.seekTo = off, -1
			}
			s.mu.Unlock()
			if origin, ok := s.nptOrigin(idx); ok && s.audioOnly(idx) {
				play.setFrom(origin + int64(math.Round(npt*tsindex.PTSHz)))
			}
			return nil
		}
		s.fillWait.Store(true)
		_, err = WaitAvailable(ctx, s.cfg.Source, idx.Size)
		s.fillWait.Store(false)
		if err != nil && ctx.Err() != nil {
			return err
		}
		// A fill that failed: the next State tells whether npt was
		// indexed before it stopped (then played from there).
	}
}
