package tsindex

import "math"

// HLSSegmentTarget is the least duration, seconds, of a node's HLS
// segment but the last (Segments' target): a node cuts a title's
// segments at the first keyframe at least this far past the previous cut.
const HLSSegmentTarget = 4.0

// Segment is one segment of a title cut at keyframes (Segments): bytes
// [Start, End) of the title, Seconds long.
type Segment struct {
	Start, End int64
	Seconds    float64
	// Discontinuity: the title's presentation times start again in or
	// right before the segment (a splice the index absorbed, PTSJump); an
	// HLS playlist tags it EXT-X-DISCONTINUITY (RFC 8216 §4.3.2.3).
	Discontinuity bool
}

// Segments cuts the indexed bytes at keyframes: at the first one at least
// target seconds (KeyframeSeconds) from the previous cut, and at the first
// one at or past each discontinuity of the presentation times (a splice),
// whose segment is marked (the segment before it keeps its own length).
// The last segment, which runs to the end of the bytes (Duration, at
// least 0.04 s), is included only when complete. The cuts depend only on
// the keyframes and splices before them, so they stay the same as more
// bytes are indexed: a node cuts a title being filled as the origin cuts
// the whole file.
func (x *Index) Segments(target float64, complete bool) []Segment {
	starts, times, disc := []int64{0}, []float64{0}, []bool{false}
	jumps := x.PTSJumps
	for k, kf := range x.Keyframes {
		t := x.KeyframeSeconds(k)
		spliced := false
		for len(jumps) > 0 && jumps[0].Offset <= kf.Offset {
			spliced, jumps = true, jumps[1:]
		}
		if kf.Offset > starts[len(starts)-1] && (spliced || t-times[len(times)-1] >= target) {
			starts, times, disc = append(starts, kf.Offset), append(times, t), append(disc, spliced)
		}
	}
	segs := make([]Segment, 0, len(starts))
	for i := 0; i+1 < len(starts); i++ {
		segs = append(segs, Segment{starts[i], starts[i+1], times[i+1] - times[i], disc[i]})
	}
	if complete {
		last := len(starts) - 1
		segs = append(segs, Segment{starts[last], x.Size, math.Max(x.Duration()-times[last], 0.04), disc[last]})
	}
	return segs
}

// LongestSegment returns the duration, seconds, of the longest segment
// Segments(target, true) cuts the indexed bytes into: the longest HLS
// segment a node cuts the title into, with target HLSSegmentTarget.
// About the longest interval between two keyframes when they come every
// target or more; below target plus that interval in any case.
func (x *Index) LongestSegment(target float64) float64 {
	longest := 0.0
	for _, s := range x.Segments(target, true) {
		longest = math.Max(longest, s.Seconds)
	}
	return longest
}
