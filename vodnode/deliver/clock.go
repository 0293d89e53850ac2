package deliver

import (
	"sort"

	"vodcluster/cdp/tsindex"
)

// TSPacketSize is the size of one MPEG-TS packet, bytes.
const TSPacketSize = tsindex.PacketSize

// PacketsPerRTP is the most TS packets one RTP packet (or one raw UDP
// datagram) carries: 7 × 188 = 1316 bytes, under a 1500-byte MTU; over
// UDP a route with a smaller MTU gets fewer (tsPayload).
const PacketsPerRTP = 7

// PayloadSize is the largest media payload of one MP2T RTP packet (or raw
// UDP datagram), bytes: every packet's over TCP; over UDP the route's MTU
// may allow less (tsPayload).
const PayloadSize = PacketsPerRTP * TSPacketSize

// clockOf maps byte offsets of a title to its stream clock (27 MHz) and
// back: from the PCRs when there are at least two, else at a constant
// bitrate (bit/s) when one is known.
type clockOf struct {
	idx     *tsindex.Index
	bitrate int64
}

func (c clockOf) ok() bool { return len(c.idx.PCRs) >= 2 || c.bitrate > 0 }

// at returns the stream clock at byte offset off, 27 MHz ticks.
func (c clockOf) at(off int64) int64 {
	if v, ok := c.idx.ClockAt(off); ok {
		return v
	}
	if c.bitrate <= 0 {
		return 0
	}
	return int64(float64(off) * 8 * tsindex.PCRHz / float64(c.bitrate))
}

// offset returns the (fractional, truncated) byte offset at which the
// stream clock reaches clock: the inverse of at.
func (c clockOf) offset(clock int64) int64 {
	x := c.idx.PCRs
	n := len(x)
	if n < 2 {
		if c.bitrate <= 0 {
			return 0
		}
		return int64(float64(clock) * float64(c.bitrate) / 8 / tsindex.PCRHz)
	}
	i := sort.Search(n, func(i int) bool { return x[i].PCR > clock })
	var a, b tsindex.PCRPoint
	switch {
	case i == 0:
		a, b = x[0], x[1]
	case i == n:
		a, b = x[n-2], x[n-1]
	default:
		a, b = x[i-1], x[i]
	}
	if b.PCR == a.PCR {
		return b.Offset
	}
	return a.Offset + int64(float64(clock-a.PCR)*float64(b.Offset-a.Offset)/float64(b.PCR-a.PCR))
}

// seconds returns the npt of offset off, seconds from the clock at 0.
func (c clockOf) seconds(off int64) float64 {
	return float64(c.at(off)-c.at(0)) / tsindex.PCRHz
}

// keyframeNPT returns the normal play time of keyframe k, seconds: its
// presentation time from the title's first picture (RFC 2326 §3.6: the
// position the viewer sees), or its stream-clock position when the
// keyframes carry no PTS.
func (c clockOf) keyframeNPT(k int) float64 {
	kf := c.idx.Keyframes[k]
	if kf.PTS >= 0 && c.idx.FirstPTS >= 0 {
		return float64(kf.Time()-c.idx.FirstPTS) / tsindex.PTSHz
	}
	return c.seconds(kf.Offset)
}

// npt returns the normal play time at byte offset off, seconds: the
// stream clock there, shifted by how much later than it is sent the last
// keyframe at or before off is presented (the mux's decoder delay), so
// that a keyframe's offset maps to its presentation time exactly. Never
// negative.
func (c clockOf) npt(off int64) float64 {
	s := c.seconds(off)
	kfs := c.idx.Keyframes
	if k := sort.Search(len(kfs), func(i int) bool { return kfs[i].Offset > off }) - 1; k >= 0 {
		s += c.keyframeNPT(k) - c.seconds(kfs[k].Offset)
	}
	return max(s, 0)
}

// nptSlack is how far, seconds, a keyframe may be presented after an npt
// and still count as at it: half the millisecond npt is answered in
// (formatNPT), so that a position the node answered (a keyframe at 0.5005 s
// at 29.97 fps answered "0.500") asked for again starts at that keyframe,
// not a GOP before it.
const nptSlack = 0.0005

// keyframeBefore returns the offset and the normal play time of the last
// keyframe presented at or before npt seconds (nptSlack after it at
// most); -1 when there is none.
func (c clockOf) keyframeBefore(npt float64) (int64, float64) {
	kfs := c.idx.Keyframes
	i := sort.Search(len(kfs), func(i int) bool { return c.keyframeNPT(i) > npt+nptSlack })
	if i == 0 {
		return -1, 0
	}
	return kfs[i-1].Offset, c.keyframeNPT(i - 1)
}

// seekSettled reports whether keyframeBefore(npt) on this index is the
// keyframe it gives on the complete title, for an index still growing:
// a keyframe presented after npt is indexed (keyframes are presented in
// file order, so none indexed later is presented at or before npt); in an
// index without keyframes (a title without video), the clock has passed
// npt. That the index's npt has passed npt is not enough: a keyframe's
// presentation time against the clock where it is sent (the mux's delay)
// varies, by 0.66 s in the sample titles, so npt(Size) can pass a time
// presented by a keyframe not indexed yet.
func (c clockOf) seekSettled(npt float64) bool {
	if !c.ok() {
		return false
	}
	if n := len(c.idx.Keyframes); n > 0 {
		return c.keyframeNPT(n-1) > npt+nptSlack
	}
	return npt < c.npt(c.idx.Size)
}
