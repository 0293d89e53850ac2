package deliver

import (
	"strconv"
	"testing"

	"vodcluster/cdp/tsindex"
)

// A PLAY's Range end (SetStop) is an npt as every other: from the title's
// first picture (clockOf.npt). It was taken as stream clock from the
// first PCR, so plays stopped short by the mux's delay, which varies
// along a title: npt 4.802 for an end of 5, 18.785 for 19 on the sample.
func TestStopOffsetIsAtTheRangeEnd(t *testing.T) {
	_, full, _, _ := sampleKeyframeBefore(t)
	ck := clockOf{idx: full}
	packet := float64(TSPacketSize*8) / float64(full.Bitrate()) // a TS packet's time, seconds
	for _, end := range []float64{2, 5, 7.3, 10, 15, 19} {
		off := stopOffsetAt(ck, end)
		if got := ck.npt(off); got < end-packet || got > end+2*packet {
			t.Errorf("stop at npt %g: offset %d at npt %.4f, want within a packet after it (%.4f s)", end, off, got, packet)
		}
		if off%TSPacketSize != 0 {
			t.Errorf("stop at npt %g: offset %d not a TS packet's", end, off)
		}
	}
	if stopOffsetAt(ck, -1) != -1 {
		t.Error("no stop: want -1")
	}
}

// A position answered in milliseconds (formatNPT), asked for again,
// starts at the keyframe it named: at 29.97 fps keyframes fall between
// milliseconds (0.5005 s answered "0.500"), and the seek took the keyframe
// before, a GOP back.
func TestSeekToAnAnsweredKeyframeTime(t *testing.T) {
	const gop = 15 * 1001 * 90000 / 30000 // 15 frames at 30000/1001 fps, 90 kHz ticks: 45045
	idx := &tsindex.Index{FirstPTS: 126000, Size: 40 * 100 * TSPacketSize}
	for k := range 40 {
		off := int64(k * 100 * TSPacketSize)
		idx.Keyframes = append(idx.Keyframes, tsindex.Keyframe{Offset: off, PTS: 126000 + int64(k)*gop})
		idx.PCRs = append(idx.PCRs, tsindex.PCRPoint{Offset: off, PCR: int64(k) * gop * 300})
	}
	ck := clockOf{idx: idx}
	for k := range idx.Keyframes {
		answered, _ := strconv.ParseFloat(strconv.FormatFloat(ck.keyframeNPT(k), 'f', 3, 64), 64)
		if off, _ := ck.keyframeBefore(answered); off != idx.Keyframes[k].Offset {
			t.Errorf("keyframe %d at %.4f s, asked for as %.3f: started at offset %d, want %d", k, ck.keyframeNPT(k), answered, off, idx.Keyframes[k].Offset)
		}
	}
}
