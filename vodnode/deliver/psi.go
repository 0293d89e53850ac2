package deliver

import (
	"io"

	"vodcluster/cdp/tsindex"
)

// psiLookahead is how far past a seek point ContinuePSI looks for the
// stream's next PAT and PMT, bytes: muxers repeat them every 100 ms or so
// (ffmpeg, broadcast practice; ETSI TR 101 290 asks for at most 500 ms).
const psiLookahead = 512 * TSPacketSize

// ContinuePSI sets the continuity counters of the PAT and PMT packets in
// psi (a copy of the title's, sent before the bytes at off after a seek)
// to one less than those of the next PAT and PMT at or after off, so that
// a decoder checking continuity (ISO/IEC 13818-1 §2.4.3.3; ffmpeg's
// "Continuity check failed", a TR 101 290 continuity count error in an
// operator's probe) sees the tables and the stream that follows as one
// sequence (the node's HLS segments that start without the stream's own
// tables use it too). A table whose next occurrence is not within psiLookahead of
// off (or not read yet, during a fill, or past bytes that are not a TS
// packet) keeps its counter.
func ContinuePSI(psi []byte, r io.ReaderAt, off int64, pmtPID uint16) {
	ahead := make([]byte, psiLookahead)
	n, _ := r.ReadAt(ahead, off)
	next := map[uint16]byte{} // PID -> continuity counter of its next packet
	for i := 0; i+TSPacketSize <= n && len(next) < 2; i += TSPacketSize {
		p := ahead[i : i+TSPacketSize]
		if p[0] != 0x47 {
			break // lost sync: the tables found before it still count
		}
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		if _, seen := next[pid]; !seen && (pid == 0 || pid == pmtPID) && p[3]&0x10 != 0 { // with a payload: counted
			next[pid] = p[3] & 0x0f
		}
	}
	for i := 0; i+TSPacketSize <= len(psi); i += TSPacketSize {
		p := psi[i : i+TSPacketSize]
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		if cc, ok := next[pid]; ok {
			p[3] = p[3]&0xf0 | (cc-1)&0x0f
		}
	}
}

// seekPSI returns the title's PAT and PMT to send before the bytes at the
// stream's position after a seek, their counters continuing into the
// stream there (ContinuePSI; made once per position: a send that must
// wait asks again).
func (s *Stream) seekPSI(idx *tsindex.Index) []byte {
	psi := s.loadPSI(idx)
	if len(psi) == 0 {
		return nil
	}
	if s.psiSeek == nil || s.psiSeekAt != s.pos {
		s.psiSeek = append(s.psiSeek[:0], psi...)
		ContinuePSI(s.psiSeek, s.cfg.Source, s.pos, idx.PMTPID)
		s.psiSeekAt = s.pos
	}
	return s.psiSeek
}
