package deliver

import (
	"errors"
	"io"
	"maps"
	"math"
	"sort"

	"vodcluster/cdp/tsindex"
)

// MaxScale bounds the trick-play speed, times real time.
const MaxScale = 64

// maxPicture bounds a keyframe picture sent in trick play, bytes of its
// video packets (an intra picture of a UHD title at 50 Mbit/s takes about
// 2 MB); a larger one is passed over, not sent cut.
const maxPicture = 8 << 20

// pictureRead is how many bytes of the title trick play reads at a time
// looking for a picture's end (the next PES start on the video PID):
// whole TS packets, about 256 kB.
const pictureRead = 1394 * TSPacketSize

var errNoKeyframes = errors.New("deliver: title has no keyframes for trick play")

// SetScale sets the play speed for the next Resume (RFC 2326 §12.34) and
// returns the speed granted: 1 for normal play (slow motion, |scale| < 1,
// is not offered); otherwise scale clamped to ±MaxScale, played as trick
// play: keyframes only, forward or backward, each sent when it is due at
// that speed.
func (s *Stream) SetScale(scale float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case math.IsNaN(scale) || math.Abs(scale) < 1 || scale == 1:
		scale = 1
	case scale > MaxScale:
		scale = MaxScale
	case scale < -MaxScale:
		scale = -MaxScale
	}
	if scale != s.scale {
		s.trickFree = 0 // a new play: the budget counts from its first picture
		if scale == 1 {
			s.injectPSI = s.pos > 0 // resume at a keyframe: give the decoder the tables
			s.trickPic, s.trickRead, s.trickCC = nil, nil, nil
		}
		s.scale = scale
		s.kf = -1
		s.anchored = false
	}
	return scale
}

func (s *Stream) trick() bool { return s.scale != 1 && s.scale != 0 }

// stepTrick sends the next keyframe picture when it is due at the stream's
// scale; see step for the result.
func (s *Stream) stepTrick(sh *shard, now int64, idx *tsindex.Index, complete bool, ck clockOf) bool {
	kfs := idx.Keyframes
	if s.kf < 0 {
		s.trickAt = -1 // a picture under way is dropped: the play moved
		if !complete && s.pos > idx.Size {
			// It stands past the part filled (its normal play read
			// there from elsewhere, the node's read of the origin far
			// ahead of the fill): its keyframes are not known yet.
			return s.park(s.pos)
		}
		i := sort.Search(len(kfs), func(i int) bool { return kfs[i].Offset >= s.pos })
		if s.scale < 0 && (i == len(kfs) || kfs[i].Offset > s.pos) {
			i--
		}
		if i < 0 {
			i = 0
		}
		if i >= len(kfs) {
			if complete {
				if len(kfs) == 0 {
					s.finish(EndError, errNoKeyframes)
				} else {
					s.pos = idx.Size
					s.endOfTitle(ck)
				}
				return false
			}
			return s.park(idx.Size)
		}
		s.kf = i
	}
	if s.trickAt < 0 && s.kf+1 >= len(kfs) && !complete {
		return s.park(idx.Size) // the picture's end is not on disk yet
	}
	due := s.trickDue(kfs[s.kf], ck, now)
	if now+int64(s.e.Lead) < due {
		return true
	}
	if s.trickAt < 0 {
		if now < s.trickFree {
			return true // the title's bitrate is spent until then
		}
		// Pictures whose time has passed while the one before went (or
		// the budget was spent) are passed over for the latest due: the
		// media advances at scale times the wall clock, and the stream
		// carries fewer pictures rather than more bytes.
		for {
			next := s.kf + 1
			if s.scale < 0 {
				next = s.kf - 1
			}
			if next < 0 || next >= len(kfs) || next+1 >= len(kfs) && !complete || s.trickDue(kfs[next], ck, now) > now {
				break
			}
			s.kf = next
		}
		// the tables, then the picture's packets, read a step a tick from now
		s.trickPic = append(s.trickPic[:0], s.loadPSI(idx)...)
		s.trickAt, s.trickRd, s.trickStarted, s.trickSent = kfs[s.kf].Offset, kfs[s.kf].Offset, false, 0
	}
	if s.trickRd >= 0 {
		// Read pictureRead bytes a tick, as normal play reads its burst
		// a tick: a picture of megabytes does not hold the shard's other
		// streams up for its whole read.
		end := idx.Size
		if s.kf+1 < len(kfs) {
			end = kfs[s.kf+1].Offset
		}
		done, err := s.readPictureStep(end, idx.VideoPID)
		if err != nil {
			s.failed(err)
			return false
		}
		if !done {
			return true
		}
		s.trickRd = -1
		if len(s.trickPic) == len(s.psi) {
			s.trickSent = len(s.trickPic) // no picture to send (none, or too large): on to the next
		} else if s.cfg.Bitrate > 0 {
			s.trickFree = max(s.trickFree, now) + int64(float64(len(s.trickPic))*8e9/float64(s.cfg.Bitrate))
		}
	}
	k := kfs[s.kf]
	// A tick sends at most MaxBurst packets of the picture, as normal
	// play's catch-up does (and a UDP GSO train stays within the
	// kernel's 64 kB).
	if s.trickSent < len(s.trickPic) {
		piece := s.trickPic[s.trickSent:min(len(s.trickPic), s.trickSent+s.e.MaxBurst*s.pay)]
		sh.reserve(len(piece), len(piece)/s.pay+1)
		buf := sh.arenaTake(len(piece))
		copy(buf, piece)
		// Numbered as sent: the rest of a picture the play leaves takes
		// no counter, and a piece the connection refused now is numbered
		// again as it is sent again.
		cc := maps.Clone(s.trickCC)
		cc.renumber(buf)
		ok, err := s.emit(sh, ck, now, buf, k.Offset, true)
		if err != nil {
			s.finish(writeEnd(err), err)
			return false
		}
		if !ok {
			if now-due > int64(s.e.MaxLag) {
				s.finish(EndSlow, ErrQueueFull)
				return false
			}
			return true
		}
		s.trickCC = cc
		if s.trickSent += len(piece); s.trickSent < len(s.trickPic) {
			return true
		}
	}
	s.trickAt = -1
	s.pos = k.Offset
	if s.scale > 0 {
		s.kf++
		if s.kf >= len(kfs) && complete {
			s.pos = idx.Size
			s.endOfTitle(ck)
			return false
		}
	} else {
		s.kf--
		if s.kf < 0 { // rewound to the start: wait there
			s.kf = -1
			s.state = statePaused
			s.queued = false
			s.idleReportLocked()
			return false
		}
	}
	return true
}

// trickDue returns when keyframe k is due in trick play, engine ns: its
// media time from the play's first picture (the anchor, set here at the
// first) divided by the scale.
func (s *Stream) trickDue(k tsindex.Keyframe, ck clockOf, now int64) int64 {
	pts := k.Time() // a splice's jump absorbed: the pictures stay paced
	if pts < 0 {
		pts = ck.at(k.Offset) / 300
	}
	if !s.anchored {
		s.anchorWall, s.anchorPTS, s.anchored = now, pts, true
	}
	dist := pts - s.anchorPTS
	if s.scale < 0 {
		dist = -dist
	}
	return s.anchorWall + int64(float64(max(dist, 0))*1e9/tsindex.PTSHz/math.Abs(s.scale))
}

// ccRun holds, per PID, the continuity counter of the last packet a
// trick play sent.
type ccRun map[uint16]byte

// renumber sets the continuity counters of the TS packets in b to follow
// those the trick play sent before, PID by PID: the counter goes up by
// one with each packet that carries a payload and stays with one that
// does not (ISO/IEC 13818-1 §2.4.3.3), so that the pictures, taken from
// all over the title, and the tables sent before each read as one
// continuous stream (a jump is a continuity error, which monitoring
// probes count, ETSI TR 101 290 1.4, and ffmpeg flags the packets
// corrupt). A PID's first packet keeps its counter.
//
// A duplicate packet (the same counter twice, which §2.4.3.3 allows) is
// numbered as a new one: files rarely hold them.
func (c *ccRun) renumber(b []byte) {
	if *c == nil {
		*c = ccRun{}
	}
	for i := 0; i+TSPacketSize <= len(b); i += TSPacketSize {
		p := b[i : i+TSPacketSize]
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		cc, seen := (*c)[pid]
		switch {
		case !seen:
			cc = p[3] & 0x0f
		case p[3]&0x10 != 0: // with a payload
			cc = (cc + 1) & 0x0f
		}
		p[3] = p[3]&0xf0 | cc
		(*c)[pid] = cc
	}
}

// readPictureStep reads the next pictureRead bytes (at most) of the
// keyframe picture at s.trickAt, from s.trickRd and no further than end
// (the next keyframe, or the end of the title), and appends to s.trickPic
// the packets of video PID pid from its PES start up to the next PES
// start on that PID (one access unit). done is true once the picture's
// end is found (that next PES start, end, or bytes that are not a TS
// packet); a picture of more than maxPicture bytes is then left out
// (s.trickPic holds the tables alone). It returns a *ReadError when the
// source fails.
func (s *Stream) readPictureStep(end int64, pid uint16) (done bool, err error) {
	if s.trickRead == nil {
		s.trickRead = make([]byte, pictureRead)
	}
	at := s.trickRd
	b := s.trickRead[:min(int64(len(s.trickRead)), end-at)]
	if len(b) == 0 {
		return true, nil
	}
	if n, err := s.cfg.Source.ReadAt(b, at); err != nil && (err != io.EOF || n < len(b)) {
		return false, readError(at, err)
	}
	s.trickRd += int64(len(b))
	head := len(s.psi)
	for r := 0; r+TSPacketSize <= len(b); r += TSPacketSize {
		p := b[r : r+TSPacketSize]
		if p[0] != 0x47 {
			return true, nil
		}
		if uint16(p[1]&0x1f)<<8|uint16(p[2]) != pid {
			continue
		}
		if p[1]&0x40 != 0 {
			if s.trickStarted {
				return true, nil
			}
			s.trickStarted = true
		}
		if !s.trickStarted {
			continue
		}
		if len(s.trickPic)-head+TSPacketSize > maxPicture {
			s.trickPic = s.trickPic[:head]
			return true, nil
		}
		s.trickPic = append(s.trickPic, p...)
	}
	return s.trickRd >= end, nil
}

// loadPSI returns the title's PSI (see ReadPSI), read once.
func (s *Stream) loadPSI(idx *tsindex.Index) []byte {
	if !s.psiLoaded && idx.PMTPID != 0 {
		s.psiLoaded = true
		s.psi = ReadPSI(s.cfg.Source, idx)
	}
	return s.psi
}

// ReadPSI returns the first PAT and PMT packets (2 × 188 bytes) among the
// first 256 packets of a title, what a decoder needs before a picture it
// jumps to; nil when they are not there.
func ReadPSI(r io.ReaderAt, idx *tsindex.Index) []byte {
	if idx.PMTPID == 0 {
		return nil
	}
	head := make([]byte, min(idx.Size, 256*TSPacketSize))
	n, _ := r.ReadAt(head, 0)
	var pat, pmt []byte
	for off := 0; off+TSPacketSize <= n && (pat == nil || pmt == nil); off += TSPacketSize {
		p := head[off : off+TSPacketSize]
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		switch {
		case p[0] != 0x47:
			return nil
		case pid == 0 && p[1]&0x40 != 0 && pat == nil:
			pat = p
		case pid == idx.PMTPID && p[1]&0x40 != 0 && pmt == nil:
			pmt = p
		}
	}
	if pat == nil || pmt == nil {
		return nil
	}
	return append(append([]byte(nil), pat...), pmt...)
}
