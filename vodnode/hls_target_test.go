package vodnode

import "testing"

// EXT-X-TARGETDURATION holds every EXTINF rounded to the nearest integer
// (RFC 8216 §4.3.3.1) as the EXTINF is written, to the millisecond: a
// segment of 8.4996 s, written 8.500, needs 9, where rounding its exact
// duration gave 8. The title's longest segment (the origin's measure)
// counts as one of them, from the first playlist; 0 is unknown.
func TestTargetDurationOfTheWrittenEXTINF(t *testing.T) {
	for _, c := range []struct {
		durs    []float64
		longest float64
		want    float64
	}{
		{[]float64{4, 4.1, 3.9}, 0, 8},
		{[]float64{4, 8.4994}, 0, 8},
		{[]float64{4, 8.4996}, 0, 9},
		{[]float64{11.6}, 0, 12},
		{[]float64{4, 4}, 10.2, 10},
		{[]float64{4}, 8.4996, 9},
		{[]float64{4, 11.6}, 10, 12},
		{nil, 4.3, 8},
	} {
		var segs []segment
		for _, d := range c.durs {
			segs = append(segs, segment{dur: d})
		}
		if got := targetDuration(segs, c.longest); got != c.want {
			t.Errorf("segments of %v s, the longest %v s: target %v, want %v", c.durs, c.longest, got, c.want)
		}
	}
}
