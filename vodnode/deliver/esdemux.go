package deliver

import (
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v4/pkg/format/rtpmpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"vodcluster/cdp/tsindex"
)

// audioTrackOf returns the track index of the AAC track of PID pid, the
// nth (from 1) the demultiplexer lists: 1+k for ProbeES's AAC track k of
// that PID (a track whose PMT entry initDemux stripped is not listed),
// by order when the tracks' PIDs are not known; -1 for none offered.
func (s *ESStream) audioTrackOf(pid uint16, nth int) int {
	a := s.cfg.Tracks.AudioTracks()
	for k, t := range a {
		if t.PID == pid && pid != 0 {
			return 1 + k
		}
	}
	if nth <= len(a) && a[nth-1].PID == 0 {
		return nth
	}
	return -1
}

// demuxAudio makes r push the RTP packets of AAC track t, track index i,
// when that track was set up: each on its own RTP stream, with its own
// payload type and clock rate (its format's), on the play's timeline.
func (s *ESStream) demuxAudio(r *mpegts.Reader, t *mpegts.Track, i int, rd *pacedReader, play *esPlay) error {
	f := s.audioFormat(i)
	if !s.track(i) || f == nil {
		return nil
	}
	enc := &rtpmpeg4audio.Encoder{PayloadType: f.PayloadTyp, SizeLength: 13, IndexLength: 3, IndexDeltaLength: 3, PayloadMaxSize: s.payMax[i]}
	if err := enc.Init(); err != nil {
		return err
	}
	rate := int64(f.ClockRate())
	r.OnDataMPEG4Audio(t, func(pts int64, aus [][]byte) error {
		pkts, err := enc.Encode(aus)
		if err != nil {
			return nil
		}
		auSizeWhole(pkts)
		due := play.unwrap(pts)
		shift := play.place(i, due, rd.clock/300)
		end := due + int64(len(aus))*mpeg4audio.SamplesPerAccessUnit*tsindex.PTSHz/rate
		if pkts = play.skipEarly(i, due, end, rate, pkts); len(pkts) == 0 {
			play.audioRead(i, end+shift)
			return nil
		}
		due += shift
		ts := s.rtpTime(i, due)
		ats := make([]int64, len(pkts))
		for j, p := range pkts {
			// The encoder stamps each packet with its first frame's
			// offset: each leaves by that frame's time.
			ats[j] = due + int64(p.Timestamp)*tsindex.PTSHz/rate
			p.Timestamp += ts
		}
		s.armStop(play)
		play.push(i, rd.off, shift, pkts, ats)
		play.audioRead(i, end+shift) // once queued: the pictures after it may go
		return nil
	})
	return nil
}

// awaitsAudioLocked reports whether unit u, due at wall time at, is a
// picture that waits for the audio due before it: of an audio track
// played (only the tracks set up are read), audio is read, the frames
// due before u not yet, but those due up to esAudioGap before it (a track
// that ended, or has a gap, holds nothing back), and the reader, neither
// ended nor waiting for the fill, has not kept its pace up to at (read on
// time, audio due before u was read with the pictures due up to at).
// p.mu held.
func (p *esPlay) awaitsAudioLocked(u *esUnit, at time.Time) bool {
	if u.track != 0 || p.ended || p.readerFill || !at.After(p.readerOnTime) {
		return false
	}
	for i, set := range p.audioSet {
		if e := p.audioEnd[i] - p.lead; set && e < u.due && u.due-e <= esAudioGap {
			return true
		}
	}
	return false
}

// esAudioGap is how long before a picture's due time (90 kHz ticks) the
// audio read may end for the picture to wait for the rest while its
// reader is stalled (awaitsAudioLocked): a stall leaves the audio read
// ending at most about esResync (a picture's longest wait) before the
// pictures held, less the ~0.15 s it is read ahead; audio ending further
// back has a gap there, or ended (a title whose audio track is shorter
// than its video): none is coming for the picture to wait for, which
// went out up to the stall's length late for nothing.
const esAudioGap = 3 * tsindex.PTSHz / 2

// demux reads the title with mediacommon's MPEG-TS reader and pushes the
// RTP packets of each access unit of the tracks set up to play, until the
// reader fails (io.EOF at the end of the title, the reader's context's
// error when stopped).
func (s *ESStream) demux(rd *pacedReader, play *esPlay) error {
	r := &mpegts.Reader{}
	if err := s.initDemux(r, rd); err != nil {
		return err
	}
	r.OnDecodeError(func(error) {})
	// The first H.264 track and each AAC track set up, each on its own
	// RTP stream, as ProbeES offered them.
	var video bool
	audio := 0
	for _, t := range r.Tracks() {
		switch t.Codec.(type) {
		case *mpegts.CodecH264:
			if video {
				continue
			}
			video = true
			if s.track(0) {
				enc := &rtph264.Encoder{PayloadType: 96, PacketizationMode: 1, PayloadMaxSize: s.payMax[0]}
				if err := enc.Init(); err != nil {
					return err
				}
				r.OnDataH264(t, func(pts, dts int64, au [][]byte) error {
					pkts, err := enc.Encode(au)
					if err != nil {
						return nil // an access unit that cannot be packetised is skipped
					}
					stapNRI(pkts)
					pts, dts = play.unwrap(pts), play.unwrap(dts)
					play.noteReorder(pts - dts)
					shift := play.place(0, dts, rd.clock/300)
					ts, at := s.rtpTime(0, pts+shift), dts+shift
					ats := make([]int64, len(pkts))
					for i, p := range pkts {
						p.Timestamp += ts // the encoder stamps from 0
						ats[i] = at       // a picture leaves at its decoding time
					}
					s.armStop(play)
					play.push(0, rd.off, shift, pkts, ats)
					return nil
				})
			}
		case *mpegts.CodecMPEG4Audio:
			audio++
			if err := s.demuxAudio(r, t, s.audioTrackOf(t.PID, audio), rd, play); err != nil {
				return err
			}
		}
	}
	for {
		if err := r.Read(); err != nil {
			return err
		}
	}
}

// track reports whether track i was set up.
func (s *ESStream) track(i int) bool {
	if i < 0 || i >= len(s.tc) {
		return false
	}
	if s.cfg.Mode == RTPTCP {
		return s.tc[i].Channel >= 0
	}
	return s.tc[i].Dest != nil
}
