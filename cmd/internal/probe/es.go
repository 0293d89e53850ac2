package probe

import (
	"fmt"
	"sync"

	"github.com/bluenviron/gortsplib/v4"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/pion/rtp"
)

// esCounter counts the access units of an elementary-stream play with
// gortsplib's depacketizers (RFC 6184 H.264, RFC 7798 H.265, RFC 3640
// AAC), and its seconds of media by the video's RTP timestamps (the
// audio's when there is no video).
type esCounter struct {
	mu           sync.Mutex
	video, audio int
	clock        *rtpClock // video's, else audio's
}

// rtpClock is the span of one track's RTP timestamps.
type rtpClock struct {
	rate int    // Hz
	last uint32 // the furthest timestamp seen
	span int64  // timestamp units from the first to the furthest
	seen bool
}

func (k *rtpClock) add(ts uint32) {
	if !k.seen {
		k.last, k.seen = ts, true
		return
	}
	if d := int64(int32(ts - k.last)); d > 0 { // later (modulo 2^32): RTP timestamps wrap
		k.last = ts
		k.span += d
	}
}

func (e *esCounter) close() {}

func (e *esCounter) result() (int, int, float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	seconds := 0.0
	if e.clock != nil && e.clock.rate > 0 {
		seconds = float64(e.clock.span) / float64(e.clock.rate)
	}
	return e.video, e.audio, seconds
}

// setupES sets up every H.264, H.265 and AAC media of desc and counts
// their access units. ErrNoMPEGTS when desc has none of them.
func setupES(c *gortsplib.Client, desc *description.Session, onPacket func(*rtp.Packet)) (counter, error) {
	e := &esCounter{}
	var videoClock, audioClock *rtpClock
	type track struct {
		m      *description.Media
		f      format.Format
		decode func(*rtp.Packet) ([][]byte, error)
		video  bool
	}
	var tracks []track
	for _, m := range desc.Medias {
		for _, f := range m.Formats {
			switch f := f.(type) {
			case *format.H264:
				d, err := f.CreateDecoder()
				if err != nil {
					return nil, fmt.Errorf("probe: H.264 track: %w", err)
				}
				tracks = append(tracks, track{m, f, d.Decode, true})
			case *format.H265:
				d, err := f.CreateDecoder()
				if err != nil {
					return nil, fmt.Errorf("probe: H.265 track: %w", err)
				}
				tracks = append(tracks, track{m, f, d.Decode, true})
			case *format.MPEG4Audio:
				d, err := f.CreateDecoder()
				if err != nil {
					return nil, fmt.Errorf("probe: AAC track: %w", err)
				}
				size, index := f.SizeLength, f.IndexLength
				tracks = append(tracks, track{m, f, func(p *rtp.Packet) ([][]byte, error) {
					fragmentAUSize(p, size, index)
					return d.Decode(p)
				}, false})
			default:
				continue
			}
			break // the media's first format the probe counts
		}
	}
	if len(tracks) == 0 {
		return nil, ErrNoMPEGTS
	}
	for _, t := range tracks {
		if _, err := c.Setup(desc.BaseURL, t.m, 0, 0); err != nil {
			return nil, fmt.Errorf("probe: SETUP %s: %w%s", t.f.Codec(), err, setupRefusalHint(c, err))
		}
		k := &rtpClock{rate: t.f.ClockRate()}
		if t.video && videoClock == nil {
			videoClock = k
		} else if !t.video && audioClock == nil {
			audioClock = k
		}
		c.OnPacketRTP(t.m, t.f, func(pkt *rtp.Packet) {
			onPacket(pkt)
			aus, err := t.decode(pkt) // an error: more packets needed, or a loss
			e.mu.Lock()
			defer e.mu.Unlock()
			k.add(pkt.Timestamp)
			if err != nil {
				return
			}
			if t.video {
				e.video++
			} else {
				e.audio += len(aus)
			}
		})
	}
	e.clock = videoClock
	if e.clock == nil {
		e.clock = audioClock
	}
	return e, nil
}

// fragmentAUSize rewrites the AU-size of p, an AAC packet (RFC 3640) with
// one 16-bit AU-header (sizeLength + indexLength = 16), from the whole
// access unit's size, which a fragment carries (§3.2.1.1), to the
// fragment's own length, which gortsplib v4.16.2's decoder expects of a
// fragment (it refuses the other as too short, and the probe counted one
// frame fewer for each access unit larger than a packet). A packet
// whose AU-size fits its payload is left alone.
func fragmentAUSize(p *rtp.Packet, sizeLength, indexLength int) {
	b := p.Payload
	if sizeLength+indexLength != 16 || len(b) < 4 || b[0] != 0 || b[1] != 16 {
		return
	}
	hdr := int(b[2])<<8 | int(b[3])
	size, index := hdr>>indexLength, hdr&(1<<indexLength-1)
	if n := len(b) - 4; size > n {
		hdr = n<<indexLength | index
		b[2], b[3] = byte(hdr>>8), byte(hdr)
	}
}
