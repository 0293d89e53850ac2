package deliver

import "github.com/pion/rtp"

// stapNRI sets the NRI of each STAP-A packet (NAL unit type 24) in pkts,
// H.264 RTP packets as rtph264.Encoder returns them, to the highest NRI
// of the NAL units it aggregates, as RFC 6184 §5.7.1 requires. gortsplib
// v4.16.2's encoder leaves it 0, so the packet that carries a picture's
// SPS and PPS (NRI 3) looked discardable to a receiver or middlebox that
// drops by priority.
func stapNRI(pkts []*rtp.Packet) {
	for _, p := range pkts {
		b := p.Payload
		if len(b) == 0 || b[0]&0x1f != 24 {
			continue
		}
		nri := byte(0)
		for i := 1; i+2 <= len(b); {
			n := int(b[i])<<8 | int(b[i+1])
			i += 2
			if n == 0 || i+n > len(b) {
				break
			}
			nri = max(nri, b[i]&0x60)
			i += n
		}
		b[0] = b[0]&^0x60 | nri
	}
}

// auSizeWhole writes into each packet of a fragmented AAC access unit the
// size of the whole access unit, as RFC 3640 §3.2.1.1 requires ("the AU
// size indicates the size of the entire AU and not the size of the
// fragment"). gortsplib v4.16.2's rtpmpeg4audio.Encoder writes each
// fragment's own length (mended upstream after that release), and
// ffmpeg, which tells a fragment by an AU-size larger than the packet,
// took each fragment for a whole frame. pkts are as that encoder returns
// them with SizeLength 13 and IndexLength 3 (one 16-bit AU-header per
// access unit): a fragmented access unit is a run of packets without the
// marker bit ended by one with it.
func auSizeWhole(pkts []*rtp.Packet) {
	for i := 0; i < len(pkts); {
		j := i
		for j < len(pkts) && !pkts[j].Marker {
			j++
		}
		if j == len(pkts) {
			return
		}
		run := pkts[i : j+1]
		i = j + 1
		if len(run) == 1 {
			continue
		}
		total := 0
		for _, p := range run {
			if len(p.Payload) < 4 || p.Payload[0] != 0 || p.Payload[1] != 16 {
				total = -1 // not one 16-bit AU-header: left as it is
				break
			}
			total += len(p.Payload) - 4
		}
		if total < 0 || total >= 1<<13 {
			continue
		}
		for _, p := range run {
			p.Payload[2], p.Payload[3] = byte(total>>5), byte(total<<3)
		}
	}
}
