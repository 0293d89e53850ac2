package deliver

import (
	"errors"
	"io"
	"math"
	"sort"

	"vodcluster/cdp/tsindex"
)

// MaxScale bounds the trick-play speed, times real time.
const MaxScale = 64

// maxPicture bounds the bytes read for one keyframe picture in trick play.
const maxPicture = 256 << 10

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
		if scale == 1 {
			s.injectPSI = s.pos > 0 // resume at a keyframe: give the decoder the tables
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
	k := kfs[s.kf]
	end := idx.Size
	if s.kf+1 < len(kfs) {
		end = kfs[s.kf+1].Offset
	} else if !complete {
		return s.park(idx.Size) // the picture's end is not on disk yet
	}
	end = min(end, k.Offset+maxPicture)
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
	due := s.anchorWall + int64(float64(max(dist, 0))*1e9/tsindex.PTSHz/math.Abs(s.scale))
	if now+int64(s.e.Lead) < due {
		return true
	}
	psi := s.loadPSI(idx)
	n := int(end - k.Offset)
	sh.reserve(len(psi)+n, (len(psi)+n)/s.pay+1)
	buf := sh.arenaTake(len(psi) + n)
	copy(buf, psi)
	if _, err := s.cfg.Source.ReadAt(buf[len(psi):], k.Offset); err != nil {
		s.failed(readError(k.Offset, err))
		return false
	}
	m := pictureOnly(buf[len(psi):], idx.VideoPID)
	ok, err := s.emit(sh, ck, now, buf[:len(psi)+m], k.Offset, true)
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

// pictureOnly keeps, in place, the packets of video PID pid from the start
// of b up to the next PES start on that PID (one access unit), and returns
// the bytes kept.
func pictureOnly(b []byte, pid uint16) int {
	w := 0
	started := false
	for r := 0; r+TSPacketSize <= len(b); r += TSPacketSize {
		p := b[r : r+TSPacketSize]
		if p[0] != 0x47 {
			break
		}
		if uint16(p[1]&0x1f)<<8|uint16(p[2]) != pid {
			continue
		}
		if p[1]&0x40 != 0 {
			if started {
				break
			}
			started = true
		}
		if !started {
			continue
		}
		copy(b[w:], p)
		w += TSPacketSize
	}
	return w
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
