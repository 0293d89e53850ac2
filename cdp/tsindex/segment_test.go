package tsindex

import (
	"math"
	"testing"
)

// LongestSegment is the longest segment Segments cuts, the last one (to
// the end of the bytes) included.
func TestLongestSegment(t *testing.T) {
	for _, c := range []struct {
		name      string
		keyframes []float64 // seconds, in a 30 s title
		want      float64
	}{
		{"keyframes every 2 s", []float64{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28}, 4},
		{"keyframes 10 s apart after 12 s", []float64{0, 2, 4, 6, 8, 10, 12, 22}, 10},
		{"the last segment longest", []float64{0, 4, 8, 12, 16}, 14},
		{"no keyframe 4 s past the first", []float64{0, 3}, 30},
	} {
		const size = 30_000 * PacketSize
		x := &Index{Size: size, FirstPTS: 0, PCRs: []PCRPoint{{0, 0}, {size, 30 * PCRHz}}}
		for _, s := range c.keyframes {
			x.Keyframes = append(x.Keyframes, Keyframe{Offset: int64(s*1000) * PacketSize, PTS: int64(s * PTSHz)})
		}
		if got := x.LongestSegment(HLSSegmentTarget); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: longest segment %v s, want %v", c.name, got, c.want)
		}
	}
}
