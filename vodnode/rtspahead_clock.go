package vodnode

import (
	"cmp"
	"math"
	"slices"

	"vodcluster/cdp/tsindex"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// clockPoint is a point of a title's clock: the title presents npt
// (seconds from its start) at byte offset off, as its PCRs give it.
type clockPoint struct {
	npt float64
	off int64
}

// maxClockPoints bounds the points a session keeps of its title's clock
// (one per extent started; a seek takes a few).
const maxClockPoints = 64

// estimate returns the byte offset at which the title presents npt
// seconds, and the rate there in bytes/s: a linear interpolation between
// the nearest points of the title's clock known before and after npt
// (the title's start, the fill's last PCR, the first PCR of each extent
// read for the session, the title's end at its duration), or its mean bitrate after the last. On a title of variable
// bitrate each extent that lands away from its time brings the next one
// closer, as the secant method does. Under mu.
func (s *aheadSource) estimate(v *store.View, npt float64) (off, rate float64) {
	lo, hi, hiOK := clockPoint{}, clockPoint{}, false
	consider := func(p clockPoint) {
		switch {
		case p.npt <= npt && p.npt >= lo.npt:
			lo = p
		case p.npt > npt && (!hiOK || p.npt < hi.npt):
			hi, hiOK = p, true
		}
	}
	if x := &v.Index; len(x.PCRs) >= 2 {
		last := x.PCRs[len(x.PCRs)-1]
		consider(clockPoint{npt: x.Seconds(last.Offset), off: last.Offset})
	}
	for _, p := range s.clock {
		consider(p)
	}
	if s.meta.Duration > 0 {
		consider(clockPoint{npt: s.meta.Duration, off: s.meta.Size})
	}
	rate = float64(s.meta.Bitrate) / 8
	if hiOK && hi.off > lo.off && hi.npt > lo.npt {
		rate = float64(hi.off-lo.off) / (hi.npt - lo.npt)
	}
	return float64(lo.off) + (npt-lo.npt)*rate, rate
}

// startAt returns where an extent for a play from npt starts: the
// offset estimate places rtspAheadMargin before npt (the keyframe
// presented at or before npt, a GOP and the mux's delay before it, comes
// after), whole packets, 0 at least. Under mu.
func (s *aheadSource) startAt(v *store.View, npt float64) int64 {
	est, _ := s.estimate(v, npt-rtspAheadMargin.Seconds())
	start := max(int64(est), 0)
	return start - start%deliver.TSPacketSize
}

// reaimLocked adds the title's clock at e's first PCR, first, to the
// session's points (estimate) and, when it shows that e started so far
// before its time that its reads would run through more than
// rtspAheadMargin of the title more than needed before the play's first
// picture (a title whose bitrate up to there is above its mean: for a
// film resumed an hour in, minutes of it), starts the play's extent
// again where the points now place the time (up to rtspAheadTries in
// all). It reports whether it did. An extent that started after its time
// is started again earlier by restartLocked, once its first keyframe
// shows it. Under mu.
func (s *aheadSource) reaimLocked(e *aheadExtent, head *tsindex.Index, first tsindex.PCRPoint) bool {
	at := float64(first.PCR+e.pcrShift-head.PCRs[0].PCR) / tsindex.PCRHz
	if len(s.clock) < maxClockPoints {
		p := clockPoint{npt: at, off: first.Offset}
		i, _ := slices.BinarySearchFunc(s.clock, p, func(a, b clockPoint) int { return cmp.Compare(a.npt, b.npt) })
		s.clock = slices.Insert(s.clock, i, p)
	}
	if at >= e.target || e.tries+1 >= rtspAheadTries {
		return false
	}
	v := s.title().View()
	est, rate := s.estimate(v, e.target)
	start := s.startAt(v, e.target)
	if !(est < float64(s.meta.Size)) || float64(start-e.end) <= rtspAheadMargin.Seconds()*rate {
		return false
	}
	s.n.log.Info("RTSP play far ahead of the title's fill: the origin's read started well before its time (the title's bitrate up to there is above its mean); it starts again later",
		"title", s.meta.ID, "npt", e.target, "read_npt", at, "offset", start)
	s.ext = nil
	s.startLocked(start, e.target, e.tries+1)
	return true
}

// earlyLocked returns the furthest offset known to present a time at
// least rtspAheadMargin before npt: the first PCR of an extent read in
// the session (read true) or the fill's last PCR; 0 with neither. An
// extent started there holds the keyframe presented at or before npt (a
// GOP is shorter than the margin). Under mu.
func (s *aheadSource) earlyLocked(v *store.View, npt float64) (off int64, read bool) {
	if x := &v.Index; len(x.PCRs) >= 2 {
		last := x.PCRs[len(x.PCRs)-1]
		if x.Seconds(last.Offset) <= npt-rtspAheadMargin.Seconds() {
			off = last.Offset
		}
	}
	for _, p := range s.clock {
		if p.npt <= npt-rtspAheadMargin.Seconds() && p.off > off {
			off, read = p.off, true
		}
	}
	return off, read
}

// shiftTo places e's PCRs on the title's clock: they are the stream's,
// but unwrapped from the extent's first; the 33-bit wraps between the
// title's start and the extent are those nearest to what the bitrate
// gives for its offset (shiftPTS for the PTSs, which wrap apart).
func (e *aheadExtent) shiftTo(head *tsindex.Index, bitrate int64) {
	const wrapPCR = (int64(1) << 33) * 300
	first := e.b.Index().PCRs[0]
	want := float64(head.PCRs[0].PCR) + float64(first.Offset-head.PCRs[0].Offset)*8*tsindex.PCRHz/float64(bitrate)
	k := int64(math.Round((want - float64(first.PCR)) / float64(wrapPCR)))
	e.pcrShift, e.shifted = k*wrapPCR, true
}

// shiftPTS places e's PTSs on the title's, from k, its first keyframe
// with a PTS: the 33-bit wraps nearest to what the bitrate gives for its
// offset from the title's first picture.
func (e *aheadExtent) shiftPTS(head *tsindex.Index, bitrate int64, k tsindex.Keyframe) {
	const wrap = int64(1) << 33
	want := float64(head.FirstPTS) + float64(k.Offset-head.PCRs[0].Offset)*8*tsindex.PTSHz/float64(bitrate)
	e.ptsShift, e.ptsShifted = wrap*int64(math.Round((want-float64(k.PTS))/float64(wrap))), true
}

// headKnown reports whether the fill has indexed what an extent's index
// takes from the title's start: two PCRs, the PMT and a picture's PTS.
func headKnown(x *tsindex.Index) bool {
	return len(x.PCRs) >= 2 && x.PMTPID != 0 && x.FirstPTS >= 0
}
