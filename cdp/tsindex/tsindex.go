// Package tsindex indexes an MPEG-TS (ISO/IEC 13818-1) title for delivery:
// the program clock references (PCR) that pace real-time streaming, the
// random-access points (video keyframes) that seeking and trick play start
// from, and the title's duration and mean bitrate.
//
// The index is built incrementally (Builder.Write takes the bytes as they
// arrive), so a node can stream a title that is still being filled from the
// origin. Only the packet header, the adaptation field, PES headers and the
// PAT/PMT sections are read; elementary streams are left alone.
package tsindex

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// PacketSize is the size of one transport stream packet, bytes.
const PacketSize = 188

// PCRHz is the frequency of the program clock reference, Hz (27 MHz).
const PCRHz = 27_000_000

// PTSHz is the frequency of presentation time stamps, Hz (90 kHz).
const PTSHz = 90_000

const syncByte = 0x47

// ErrNotTS is returned when the data is not a transport stream of 188-byte
// packets (a packet does not start with the sync byte 0x47).
var ErrNotTS = errors.New("tsindex: not an MPEG-TS stream (lost sync)")

// PCRPoint is one PCR sample: the byte offset of the packet that carries it
// and its value in 27 MHz ticks, unwrapped (monotonic across the 33-bit
// wrap of the PCR base) and relative to nothing (the first sample is not 0).
type PCRPoint struct {
	Offset int64 // bytes from the start of the title; a multiple of 188
	PCR    int64 // 27 MHz ticks
}

// Keyframe is one random-access point of the video stream: a PES packet
// whose first TS packet carries the random_access_indicator or whose
// payload begins an H.264/H.265 access unit holding an IDR picture.
type Keyframe struct {
	Offset int64 // bytes, offset of the first TS packet of the PES packet
	PTS    int64 // 90 kHz ticks, unwrapped, as the stream has it; -1 when the PES header has none
	// Jump is what places PTS on the index's continuous timeline, 90 kHz
	// ticks: the presentation-time discontinuities absorbed before it
	// (Builder; 0 in a title that has none). Time gives the sum.
	Jump int64
}

// Time returns k's presentation time on its index's continuous timeline
// (PTS + Jump), 90 kHz ticks; -1 when k has no PTS. Seeks, npt and HLS
// segment durations count this; RTP timestamps, which follow the
// stream's own PTS, count PTS.
func (k Keyframe) Time() int64 {
	if k.PTS < 0 {
		return -1
	}
	return k.PTS + k.Jump
}

// Index is what a Builder learnt from the bytes it was given.
type Index struct {
	Size      int64      // bytes indexed (whole packets only)
	PCRPID    uint16     // PID carrying the PCR (the first one seen)
	VideoPID  uint16     // PID of the first video stream of the PMT; 0 when none yet
	PMTPID    uint16     // PID of the first program's PMT; 0 when none yet
	PCRs      []PCRPoint // every PCR of PCRPID, in file order
	Keyframes []Keyframe // random-access points of VideoPID, in file order
	FirstPTS  int64      // 90 kHz ticks of the first video PTS seen, -1 when none
	// PCRJumps counts the PCR discontinuities absorbed (Builder): PCRs
	// that went back, or forward by more than MaxPCRStep beyond what the
	// bytes since the last one give, whether the stream flagged them
	// (discontinuity_indicator, a splice) or not (damaged bytes).
	PCRJumps int
	// PTSJumps are the discontinuities of the video's presentation times
	// absorbed (Builder, Keyframe.Jump), in file order: a splice of two
	// encodes that were not stamped again restarts them (with the PCR, or
	// under one clock remultiplexed).
	PTSJumps []PTSJump
}

// PTSJump is one discontinuity of the presentation times an Index
// absorbed: from the picture at Offset (bytes) on, the stream's PTS plus
// Shift (90 kHz ticks, the jumps so far summed) is the continuous
// timeline, on which that picture is presented at Time (90 kHz ticks).
type PTSJump struct {
	Offset int64
	Time   int64
	Shift  int64
}

// MaxLeadChange is the largest step forward, 90 kHz ticks (3 s), of the
// video's decoding time between two pictures, together with as large a
// change of how far it runs ahead of the stream's clock (DTS − PCR, the
// mux's decoder delay, which a varying bitrate moves by a fraction of a
// second), that an Index takes as the stream's: a larger one is a
// discontinuity of the times (a splice), absorbed so that the picture
// follows the one before at the stream's cadence (Keyframe.Jump,
// Builder). A decoding time that goes back by more than 100 ms is one
// whatever its size.
const MaxLeadChange = 3 * PTSHz

// MaxPCRStep is the largest step forward between two consecutive PCRs
// that an Index takes as the stream's clock, 27 MHz ticks (10 s): ISO/IEC
// 13818-1 §2.7.2 has a PCR at least every 100 ms, and muxers that space
// them out (a still picture, audio alone) stay within seconds, so a
// longer step is a discontinuity (a splice, or damaged bytes that read as
// a PCR hours ahead), unless the bytes between the two, at the mean rate
// so far, take more than a tenth of it to play.
const MaxPCRStep = 10 * PCRHz

// Builder builds an Index from bytes given in order. It is not safe for
// concurrent use; callers that share an Index across goroutines copy what
// they need under their own lock (see Snapshot).
type Builder struct {
	idx     Index
	partial [PacketSize]byte
	npart   int

	pcrBase  int64 // unwrap state for PCR, discontinuities absorbed included
	lastPCR  int64
	lastOff  int64 // offset of lastPCR
	havePCR  bool
	dtsBase  int64 // unwrap state for the video's DTS (its PTS when it has none)
	lastDTS  int64 // the last picture's DTS, unwrapped
	haveDTS  bool
	ptsJump  int64 // Keyframe.Jump from here on
	ptsLead  int64 // the last picture's DTS (with ptsJump) less the clock there, 90 kHz ticks
	cadence  int64 // the last step between two pictures' DTS, 90 kHz ticks
	haveLead bool
	videoH26 bool // video codec is H.264 or H.265 (IDR detection possible)
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{idx: Index{FirstPTS: -1}}
}

// NewBuilderAt returns an empty Builder for the bytes of a stream from
// offset off (bytes, a multiple of PacketSize) on: the offsets it indexes
// are the stream's, from off. It learns the PIDs from the PAT and PMT it
// meets there, and unwraps the PCRs and PTSs from the first it meets
// (a caller joining it to the index of the stream's start places them on
// that one's scale).
func NewBuilderAt(off int64) *Builder {
	return &Builder{idx: Index{Size: off, FirstPTS: -1}}
}

// Write indexes p, which continues the bytes given before. Partial packets
// are kept until completed. It returns len(p) and ErrNotTS when a packet
// does not begin with 0x47; the Builder then stops indexing.
func (b *Builder) Write(p []byte) (int, error) {
	n := len(p)
	if b.npart > 0 {
		c := copy(b.partial[b.npart:], p)
		b.npart += c
		p = p[c:]
		if b.npart < PacketSize {
			return n, nil
		}
		if err := b.packet(b.partial[:]); err != nil {
			return n, err
		}
		b.npart = 0
	}
	for len(p) >= PacketSize {
		if err := b.packet(p[:PacketSize]); err != nil {
			return n, err
		}
		p = p[PacketSize:]
	}
	b.npart = copy(b.partial[:], p)
	return n, nil
}

// Index returns the index built so far. The slices are shared with the
// Builder and only ever appended to: a caller may keep and read the returned
// value while the Builder goes on, as long as access is serialised.
func (b *Builder) Index() *Index { return &b.idx }

// Snapshot returns a copy of the index whose slices are not shared.
func (b *Builder) Snapshot() Index {
	s := b.idx
	s.PCRs = append([]PCRPoint(nil), b.idx.PCRs...)
	s.Keyframes = append([]Keyframe(nil), b.idx.Keyframes...)
	s.PTSJumps = append([]PTSJump(nil), b.idx.PTSJumps...)
	return s
}

func (b *Builder) packet(pkt []byte) error {
	if pkt[0] != syncByte {
		return fmt.Errorf("%w at offset %d", ErrNotTS, b.idx.Size)
	}
	off := b.idx.Size
	b.idx.Size += PacketSize
	pusi := pkt[1]&0x40 != 0
	pid := uint16(pkt[1]&0x1f)<<8 | uint16(pkt[2])
	afc := (pkt[3] >> 4) & 0x3
	payload := 4
	rai := false
	if afc&0x2 != 0 {
		afl := int(pkt[4])
		payload = 5 + afl
		if afl > 0 && payload <= PacketSize {
			flags := pkt[5]
			rai = flags&0x40 != 0
			if flags&0x10 != 0 && afl >= 7 {
				b.pcr(pid, off, pkt[6:12])
			}
		}
	}
	if afc&0x1 == 0 || payload >= PacketSize {
		return nil
	}
	data := pkt[payload:]
	switch {
	case pid == 0 && pusi:
		b.pat(data)
	case pid == b.idx.PMTPID && b.idx.PMTPID != 0 && pusi:
		b.pmt(data)
	case pid == b.idx.VideoPID && b.idx.VideoPID != 0 && pusi:
		b.videoPES(off, data, rai)
	}
	return nil
}

func (b *Builder) pcr(pid uint16, off int64, f []byte) {
	if b.idx.PCRPID == 0 && len(b.idx.PCRs) == 0 {
		b.idx.PCRPID = pid
	}
	if pid != b.idx.PCRPID {
		return
	}
	base := int64(f[0])<<25 | int64(f[1])<<17 | int64(f[2])<<9 | int64(f[3])<<1 | int64(f[4])>>7
	ext := int64(f[4]&0x1)<<8 | int64(f[5])
	v := base*300 + ext
	const wrap = (int64(1) << 33) * 300
	if b.havePCR && v+b.pcrBase < b.lastPCR-wrap/2 {
		b.pcrBase += wrap
	}
	if b.havePCR {
		// A discontinuity is absorbed: the clock goes on from the last PCR
		// at the mean rate so far, so that an Index's clock never goes back
		// nor leaps (a pacer would wait for hours, or send everything at
		// once).
		want := b.lastPCR
		if x := b.idx.PCRs; len(x) >= 2 && b.lastOff > x[0].Offset {
			// In floating point: ticks times bytes overflow int64 where
			// PCRs are gigabytes apart.
			want += int64(float64(b.lastPCR-x[0].PCR) * float64(off-b.lastOff) / float64(b.lastOff-x[0].Offset))
		}
		if step := v + b.pcrBase - b.lastPCR; step < 0 || step > max(MaxPCRStep, 10*(want-b.lastPCR)) {
			b.pcrBase = max(want, b.lastPCR+1) - v
			b.idx.PCRJumps++
		}
	}
	v += b.pcrBase
	b.lastPCR, b.lastOff, b.havePCR = v, off, true
	b.idx.PCRs = append(b.idx.PCRs, PCRPoint{Offset: off, PCR: v})
}

// section returns the section body after the pointer field and the table
// header's fixed 8 bytes, bounded by section_length minus the CRC.
func section(data []byte) ([]byte, bool) {
	if len(data) < 1 {
		return nil, false
	}
	ptr := int(data[0])
	data = data[1:]
	if ptr >= len(data) {
		return nil, false
	}
	data = data[ptr:]
	if len(data) < 8 {
		return nil, false
	}
	slen := int(data[1]&0x0f)<<8 | int(data[2])
	end := 3 + slen - 4
	if end > len(data) || end < 8 {
		return nil, false
	}
	return data[8:end], true
}

func (b *Builder) pat(data []byte) {
	if b.idx.PMTPID != 0 {
		return
	}
	body, ok := section(data)
	if !ok {
		return
	}
	for i := 0; i+4 <= len(body); i += 4 {
		prog := uint16(body[i])<<8 | uint16(body[i+1])
		if prog == 0 {
			continue // network PID
		}
		b.idx.PMTPID = uint16(body[i+2]&0x1f)<<8 | uint16(body[i+3])
		return
	}
}

func (b *Builder) pmt(data []byte) {
	if b.idx.VideoPID != 0 {
		return
	}
	body, ok := section(data)
	if !ok || len(body) < 4 {
		return
	}
	pil := int(body[2]&0x0f)<<8 | int(body[3])
	i := 4 + pil
	for i+5 <= len(body) {
		st := body[i]
		epid := uint16(body[i+1]&0x1f)<<8 | uint16(body[i+2])
		esl := int(body[i+3]&0x0f)<<8 | int(body[i+4])
		switch st {
		case 0x1b, 0x24: // H.264, H.265
			b.idx.VideoPID, b.videoH26 = epid, true
			return
		case 0x01, 0x02, 0x10: // MPEG-1/2 video, MPEG-4 part 2
			b.idx.VideoPID = epid
			return
		}
		i += 5 + esl
	}
}

func (b *Builder) videoPES(off int64, data []byte, rai bool) {
	if len(data) < 9 || data[0] != 0 || data[1] != 0 || data[2] != 1 {
		return
	}
	hlen := int(data[8])
	pts := int64(-1)
	if data[7]&0x80 != 0 && len(data) >= 14 {
		// The decoding time, which a continuous stream never takes back
		// (the presentation time does, by B-pictures), is unwrapped
		// across 2^33 forward; the PTS is it plus their difference.
		const wrap = int64(1) << 33
		rawPTS := timestamp(data[9:14])
		rawDTS := rawPTS
		if data[7]&0x40 != 0 && len(data) >= 19 {
			rawDTS = timestamp(data[14:19])
		}
		if b.haveDTS && rawDTS+b.dtsBase < b.lastDTS-wrap/2 {
			b.dtsBase += wrap
		}
		dts := rawDTS + b.dtsBase
		d := (rawPTS - rawDTS + wrap) % wrap
		if d > wrap/2 {
			d -= wrap
		}
		pts = dts + d
		if b.idx.FirstPTS < 0 {
			b.idx.FirstPTS = pts
		}
		b.absorbJump(off, dts, pts)
		b.lastDTS, b.haveDTS = dts, true
	}
	key := rai
	if !key && b.videoH26 && 9+hlen < len(data) {
		key = hasIDR(data[9+hlen:])
	}
	if key {
		b.idx.Keyframes = append(b.idx.Keyframes, Keyframe{Offset: off, PTS: pts, Jump: b.ptsJump})
	}
}

// absorbJump takes in the decoding time dts (unwrapped) of a picture at
// offset off, pts its presentation time: a discontinuity of the times (a
// splice of encodes not stamped again) is absorbed from here on
// (ptsJump), the picture placed one cadence (the last step between two
// pictures) after the one before. It is one when the DTS goes back by
// more than 100 ms (it never goes back in a continuous stream), or leaps
// forward by more than MaxLeadChange while its lead over the stream's
// clock changes by as much (a still picture's DTS steps by seconds at
// the clock's pace; a clock that strays, a damaged PCR, moves the lead
// but not the step). The clock at off is the last PCR's, carried on at
// the mean rate so far (continuous: pcr).
func (b *Builder) absorbJump(off, dts, pts int64) {
	var lead int64
	have := b.havePCR
	if have {
		clock := b.lastPCR
		if x := b.idx.PCRs; len(x) >= 2 && b.lastOff > x[0].Offset {
			clock += int64(float64(b.lastPCR-x[0].PCR) * float64(off-b.lastOff) / float64(b.lastOff-x[0].Offset))
		}
		lead = dts + b.ptsJump - clock/300
	}
	if b.haveDTS {
		step := dts - b.lastDTS
		change := lead - b.ptsLead
		back := step < -PTSHz/10
		leap := step > MaxLeadChange && have && b.haveLead && (change > MaxLeadChange || change < -MaxLeadChange)
		switch {
		case back || leap:
			cadence := b.cadence
			if cadence <= 0 || cadence > MaxLeadChange {
				cadence = PTSHz / 25
			}
			jump := b.lastDTS + b.ptsJump + cadence - dts
			lead += jump - b.ptsJump
			b.ptsJump = jump
			b.idx.PTSJumps = append(b.idx.PTSJumps, PTSJump{Offset: off, Time: pts + jump, Shift: jump})
		case step > 0:
			b.cadence = step
		}
	}
	if have {
		b.ptsLead, b.haveLead = lead, true
	}
}

// timestamp reads a 33-bit PES timestamp (PTS or DTS) from its 5 bytes.
func timestamp(p []byte) int64 {
	return int64(p[0]>>1&0x07)<<30 | int64(p[1])<<22 | int64(p[2]>>1)<<15 | int64(p[3])<<7 | int64(p[4]>>1)
}

// hasIDR reports whether an H.264 Annex-B payload (the start of an access
// unit) holds an IDR slice (nal_unit_type 5) or an H.265 IRAP (16..21)
// among the NAL units that fit in this first packet.
func hasIDR(p []byte) bool {
	for i := 0; i+3 < len(p); i++ {
		if p[i] == 0 && p[i+1] == 0 && p[i+2] == 1 {
			h := p[i+3]
			if h&0x1f == 5 {
				return true
			}
			if t := (h >> 1) & 0x3f; t >= 16 && t <= 21 && h&0x80 == 0 && i+4 < len(p) && p[i+4] == 1 {
				return true
			}
			i += 2
		}
	}
	return false
}

// BuildFrom reads r to the end and returns its index.
func BuildFrom(r io.Reader) (*Index, error) {
	b := NewBuilder()
	if _, err := io.CopyBuffer(b, r, make([]byte, 64*PacketSize)); err != nil {
		return nil, err
	}
	return b.Index(), nil
}

// Duration returns the play time of the indexed bytes in seconds: the span
// of the PCRs, extended over the bytes before the first and after the last
// PCR at the mean rate. 0 when fewer than two PCRs were seen.
func (x *Index) Duration() float64 {
	if len(x.PCRs) < 2 {
		return 0
	}
	first, last := x.PCRs[0], x.PCRs[len(x.PCRs)-1]
	span := float64(last.PCR-first.PCR) / PCRHz
	bytes := last.Offset - first.Offset
	if span <= 0 || bytes <= 0 {
		return 0
	}
	return span * float64(x.Size) / float64(bytes)
}

// Bitrate returns the mean bitrate of the indexed bytes in bit/s, measured
// between the first and the last PCR. 0 when unknown.
func (x *Index) Bitrate() int64 {
	if len(x.PCRs) < 2 {
		return 0
	}
	first, last := x.PCRs[0], x.PCRs[len(x.PCRs)-1]
	span := float64(last.PCR-first.PCR) / PCRHz
	if span <= 0 {
		return 0
	}
	return int64(float64(last.Offset-first.Offset) * 8 / span)
}

// ClockAt returns the stream clock, in 27 MHz ticks, at byte offset off:
// linear interpolation between the PCRs around it, extrapolation beyond
// the first or last at the rate between the first two or the last two.
// ok is false with fewer than two PCRs.
func (x *Index) ClockAt(off int64) (pcr int64, ok bool) {
	n := len(x.PCRs)
	if n < 2 {
		return 0, false
	}
	i := sort.Search(n, func(i int) bool { return x.PCRs[i].Offset > off })
	var a, b PCRPoint
	switch {
	case i == 0:
		a, b = x.PCRs[0], x.PCRs[1]
	case i == n:
		a, b = x.PCRs[n-2], x.PCRs[n-1]
	default:
		a, b = x.PCRs[i-1], x.PCRs[i]
	}
	if b.Offset == a.Offset {
		return a.PCR, true
	}
	return a.PCR + (b.PCR-a.PCR)*(off-a.Offset)/(b.Offset-a.Offset), true
}

// Seconds returns the stream clock at byte offset off in seconds from the
// first PCR, or 0 when the clock is unknown. (The npt a viewer is shown
// counts from the first picture instead: the two differ by the mux's
// delay, which varies along a title.)
func (x *Index) Seconds(off int64) float64 {
	c, ok := x.ClockAt(off)
	if !ok {
		return 0
	}
	return float64(c-x.PCRs[0].PCR) / PCRHz
}

// KeyframeAt returns the index into Keyframes of the last keyframe whose
// presentation time (npt, seconds from the first video PTS) is at or before
// t, or -1 when there is none (t before the first keyframe or no keyframe
// indexed yet). t is taken to the nearest 90 kHz tick (1.001 s is tick
// 90090, not 90089), and a keyframe half a millisecond after it at most
// counts as at it, as a node's seek counts it (an npt answered in
// milliseconds names the keyframe it was answered for). A keyframe without
// a PTS is taken as at or before t.
func (x *Index) KeyframeAt(t float64) int {
	target := int64(math.Round((t + 0.0005) * PTSHz))
	i := sort.Search(len(x.Keyframes), func(i int) bool {
		k := x.Keyframes[i]
		return k.PTS >= 0 && k.Time()-x.FirstPTS > target
	})
	return i - 1
}

// JumpAt returns the shift of the presentation times (PTSJump.Shift, 90
// kHz ticks) in force at byte offset off: 0 before the first jump.
func (x *Index) JumpAt(off int64) int64 {
	i := sort.Search(len(x.PTSJumps), func(i int) bool { return x.PTSJumps[i].Offset > off })
	if i == 0 {
		return 0
	}
	return x.PTSJumps[i-1].Shift
}

// JumpAtTime returns the shift in force (as JumpAt) at time t of the
// continuous timeline (90 kHz ticks, as Keyframe.Time): the stream's own
// PTS there is t less it.
func (x *Index) JumpAtTime(t int64) int64 {
	i := sort.Search(len(x.PTSJumps), func(i int) bool { return x.PTSJumps[i].Time > t })
	if i == 0 {
		return 0
	}
	return x.PTSJumps[i-1].Shift
}

// KeyframeSeconds returns the npt of keyframe k in seconds (its
// presentation time, Keyframe.Time, from the first video PTS), or its
// PCR-clock position when it has no PTS.
func (x *Index) KeyframeSeconds(k int) float64 {
	kf := x.Keyframes[k]
	if kf.PTS >= 0 && x.FirstPTS >= 0 {
		return float64(kf.Time()-x.FirstPTS) / PTSHz
	}
	return x.Seconds(kf.Offset)
}
