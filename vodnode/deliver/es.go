package deliver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"vodcluster/cdp/tsindex"
)

// ESTracks are the elementary streams of a title as RTP formats: H.264
// (RFC 6184) and AAC (RFC 3640), the tracks an elementary-stream session
// offers (Video and Audio may be nil). Track index 0 is the video, 1 the
// first AAC track, 1+k the AAC track Audios[k].
type ESTracks struct {
	Video *format.H264
	Audio *format.MPEG4Audio // the first AAC track (Audios[0].Format)
	// Audios are every AAC track of the title, in PMT order, each with
	// its own payload type (97 on); empty: Audio alone (AudioTracks).
	Audios []ESAudio
}

// ErrNoES is returned by ProbeES when a title has neither H.264 nor AAC.
var ErrNoES = errors.New("deliver: title has no H.264 or AAC elementary stream")

// probeBytes bounds how much of a title ProbeES reads.
const probeBytes = 4 << 20

// ProbeES reads the head of a title (waiting for a fill when needed) with
// mediacommon's MPEG-TS reader and returns its H.264 track, with the SPS
// and PPS of the first access unit carrying them, and each of its AAC
// tracks with its AudioSpecificConfig, PID and language (the PMT's ISO 639
// language descriptor). Errors: ErrNoES, a title that is not MPEG-TS,
// ctx's error.
func ProbeES(ctx context.Context, src Source) (*ESTracks, error) {
	rd := &headReader{ctx: ctx, src: src}
	r := &mpegts.Reader{R: rd}
	if err := r.Initialize(); err != nil {
		return nil, fmt.Errorf("deliver: probe: %w", err)
	}
	r.OnDecodeError(func(error) {})
	idx, _, _ := src.State()
	langs := pmtLanguages(ReadPSI(src, idx), idx.PMTPID)
	var out ESTracks
	var video *mpegts.Track
	for _, t := range r.Tracks() {
		switch c := t.Codec.(type) {
		case *mpegts.CodecH264:
			if video == nil {
				video = t
				out.Video = &format.H264{PayloadTyp: 96, PacketizationMode: 1}
			}
		case *mpegts.CodecMPEG4Audio:
			cfg := c.Config
			f := &format.MPEG4Audio{PayloadTyp: uint8(97 + len(out.Audios)), Config: &cfg, SizeLength: 13, IndexLength: 3, IndexDeltaLength: 3}
			if f.PayloadTyp > 127 {
				continue // past the dynamic payload types (RFC 3551 §3)
			}
			out.Audios = append(out.Audios, ESAudio{Format: f, PID: t.PID, Lang: langs[t.PID]})
		}
	}
	if len(out.Audios) > 0 {
		out.Audio = out.Audios[0].Format
	}
	if out.Video == nil && out.Audio == nil {
		return nil, ErrNoES
	}
	if video == nil {
		return &out, nil
	}
	done := errors.New("done")
	r.OnDataH264(video, func(_, _ int64, au [][]byte) error {
		for _, nalu := range au {
			switch h264.NALUType(nalu[0] & 0x1f) {
			case h264.NALUTypeSPS:
				out.Video.SPS = append([]byte(nil), nalu...)
			case h264.NALUTypePPS:
				out.Video.PPS = append([]byte(nil), nalu...)
			}
		}
		if out.Video.SPS != nil && out.Video.PPS != nil {
			return done
		}
		return nil
	})
	for {
		err := r.Read()
		if errors.Is(err, done) {
			return &out, nil
		}
		if err != nil {
			if out.Video.SPS == nil {
				return nil, fmt.Errorf("deliver: probe: no SPS/PPS in the first %d bytes: %w", rd.off, err)
			}
			return &out, nil
		}
	}
}

// headReader reads the first probeBytes of a title, waiting for a fill.
type headReader struct {
	ctx context.Context
	src Source
	off int64
}

func (r *headReader) Read(p []byte) (int, error) {
	if r.off >= probeBytes {
		return 0, io.EOF
	}
	avail, err := WaitAvailable(r.ctx, r.src, r.off)
	if err != nil {
		return 0, err
	}
	if r.off >= avail {
		return 0, io.EOF
	}
	n := min(int64(len(p)), avail-r.off, probeBytes-r.off)
	m, err := r.src.ReadAt(p[:n], r.off)
	r.off += int64(m)
	if err == io.EOF && m > 0 {
		err = nil
	}
	return m, err
}

// ESConfig describes one elementary-stream playback. Index 0 is the video
// track, 1 the first audio track (More: the further ones); a track not set
// up has a nil Dest (UDP) or a negative Channel (TCP).
type ESConfig struct {
	Source  Source
	Tracks  *ESTracks
	Mode    Mode            // RTPUDP or RTPTCP
	UDP     *UDPServer      // RTPUDP: the node's ports
	Dest    [2]*net.UDPAddr // RTPUDP: the client's RTP address per track
	RTCP    [2]*net.UDPAddr // RTPUDP: the client's RTCP address per track; nil = no RTCP
	Conn    *ConnWriter     // RTPTCP
	Channel [2]int          // RTPTCP: interleaved RTP channel per track
	SSRC    [2]uint32
	Seq     [2]uint16       // first sequence number per track
	TSBase  [2]uint32       // RTP timestamp of PTS 0 per track
	More    []ESTrackConfig // the title's further AAC tracks (track 2 on: ESTracks.AudioTracks()[1:]), in order; missing ones are not set up
	Bitrate int64           // bit/s, pacing for a title without PCR
	Tick    time.Duration
	OnEnd   func(reason EndReason, err error) // called once when the stream ends by itself (a play whose fill or read failed, over UDP: after its BYE, ByeDelay later, whatever came meanwhile)
	// OnFillFailed, when set, is asked whether the title can be filled
	// again when a play has read to the end of the bytes its title's
	// fill left before it failed (Source.State's error), or seeks past
	// them, where the stream would end with an RTCP BYE "fill failed", as
	// StreamConfig.OnFillFailed is: on a goroutine of its own, without
	// the stream's lock held (it may take its owner's locks and wait: a
	// few seconds), at most once at a time; meanwhile the play waits as
	// it does for the fill (WaitingForFill), what it read before still
	// sent on time. It returns true when the Source was filled again
	// (State no longer fails: the play goes on from where it stands, its
	// RTP sequence numbers and timestamps continuous, once the new fill
	// brings bytes); false ends the stream with its BYE "fill failed"
	// (EndError) as without it. A Seek, Abort or Close meanwhile stops
	// the play without waiting for the answer (a Pause holds it, as
	// ever, once the answer has come).
	OnFillFailed func() bool
}

// ESStream plays a title as H.264 and AAC RTP tracks, demultiplexed by
// mediacommon's MPEG-TS reader and packetised by gortsplib's rtph264 and
// rtpmpeg4audio encoders. The title is read esReadAhead past its clock
// (the PCR) and each packet is sent when due by its own time (a video
// access unit's DTS, an audio frame's PTS) on one timeline for both
// tracks, so that audio, which a multiplexer places later than the video
// of the same time, is not sent late; the RTCP sender reports map that
// timeline to the wall clock (RFC 3550 §6.4.1), which players use to put
// the tracks in sync. Unlike MP2T streams it runs two goroutines of its
// own while playing (the demultiplexer and the sender).
type ESStream struct {
	cfg ESConfig
	e   *Engine

	tc     []ESTrackConfig // per track (esTrackConfigs)
	payMax []int           // per track: largest RTP payload, bytes (esPayloadMax: fits the route's MTU over UDP)

	mu      sync.Mutex
	pos     int64 // where the next Resume starts (a keyframe)
	seq     []uint16
	packets []uint32    // RTP packets sent per track (sender reports)
	octets  []uint32    // RTP payload bytes sent per track
	lastTS  []uint32    // RTP timestamp of the last packet per track
	nextSR  []time.Time // when the next sender report of each track is due
	ended   bool
	closed  bool      // Close or Abort was called: the BYE of a play that failed, still due over UDP, is not sent
	endedBy EndReason // why it ended by itself (a play that failed; EndedBy), "" while it has not
	endErr  error     // the error it ended by itself with
	startTS []uint32  // per track: the RTP timestamp the next play starts with (as Seek answered it)
	fromNPT float64   // a title without video: the next play sends no audio that ends before this npt (startOffset), seconds; < 0: none
	stopNPT float64   // a PLAY Range's end not yet handed to a play (armStopLocked), seconds; < 0: none
	seekTo  float64   // a seek into the part not indexed yet: the next play starts at its keyframe once indexed, seconds; < 0: none
	cancel  context.CancelFunc
	done    chan struct{}
	reading *pacedReader
	play    *esPlay // the current play's clock and queue

	fillWait atomic.Bool // the play waits for the title's fill (WaitingForFill)
	bye      byeDue      // the BYEs still to send, of the end of the title or of a play that failed (byeLocked); s.mu

	bytes atomic.Int64

	reportTries atomic.Int64 // sends of the report loop (tests watch its retries)
}

// NewESStream returns an elementary-stream playback, ready to Seek and
// Resume. Errors: the engine is not running, or cfg is incomplete.
func (e *Engine) NewESStream(cfg ESConfig) (*ESStream, error) {
	if !e.started {
		return nil, ErrNotStarted
	}
	if cfg.Source == nil || cfg.Tracks == nil {
		return nil, errors.New("deliver: ES stream without source or tracks")
	}
	switch cfg.Mode {
	case RTPUDP:
		if e.UDP == nil {
			return nil, errors.New("deliver: UDP ES stream without UDP ports")
		}
	case RTPTCP:
		if cfg.Conn == nil {
			return nil, errors.New("deliver: TCP ES stream without connection")
		}
	default:
		return nil, fmt.Errorf("deliver: mode %d not available for elementary streams", cfg.Mode)
	}
	if cfg.Tick <= 0 {
		cfg.Tick = e.Tick
	}
	tc, err := esTrackConfigs(&cfg)
	if err != nil {
		return nil, err
	}
	n := len(tc)
	s := &ESStream{cfg: cfg, e: e, tc: tc, stopNPT: -1, seekTo: -1, fromNPT: -1,
		seq: make([]uint16, n), packets: make([]uint32, n), octets: make([]uint32, n), lastTS: make([]uint32, n),
		nextSR: make([]time.Time, n), startTS: make([]uint32, n), payMax: make([]int, n)}
	for i := range tc {
		var dst *net.UDPAddr
		if cfg.Mode == RTPUDP {
			dst = tc[i].Dest
		}
		s.payMax[i] = esPayloadMax(dst)
	}
	for i, t := range tc {
		s.seq[i] = t.Seq
	}
	return s, nil
}

// Resume starts sending from the position, in a goroutine; a play held
// (by Pause, or at its stop: SetStop) goes on from the next packet of
// each track.
func (s *ESStream) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.bye.cancel()
	if s.cancel != nil {
		if s.play != nil && s.play.release(time.Now()) { // a pause, or the stop, ends: on from the next packet
			s.reportAtOnceLocked()
		}
		return
	}
	s.reportAtOnceLocked() // a new play's timeline starts now too
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	idx, _, _ := s.cfg.Source.State()
	rctx, rcancel := context.WithCancel(ctx) // also ended by a failed send
	r := &pacedReader{ctx: rctx, src: s.cfg.Source, off: s.pos, bitrate: s.cfg.Bitrate, tick: s.cfg.Tick, ahead: esReadAhead, waiting: &s.fillWait,
		refill: s.cfg.OnFillFailed}
	if s.pos > 0 {
		r.prefix = ReadPSI(s.cfg.Source, idx)
	}
	s.reading, s.play = r, newESPlayN(len(s.tc))
	r.hold = s.play.waitHeld // a PAUSE holds the reader too
	r.idle = s.play.readerIdle
	s.armStopLocked(idx)
	if origin, ok := s.nptOrigin(idx); ok && s.fromNPT >= 0 {
		s.play.setFrom(origin + int64(math.Round(s.fromNPT*tsindex.PTSHz)))
	}
	s.fromNPT = -1
	go s.run(ctx, rcancel, r, s.play, s.seekTo, s.done)
}

// stop ends the goroutines and keeps, as the position, the first keyframe
// at or after the PES of the last packet sent (so that timestamps go on
// forward); nothing sent, the position stays.
func (s *ESStream) stop() {
	s.mu.Lock()
	cancel, done, play := s.cancel, s.done, s.play
	s.cancel, s.done, s.reading, s.play = nil, nil, nil, nil
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	off := play.lastSentOffset()
	if off < 0 {
		return
	}
	idx, _, _ := s.cfg.Source.State()
	s.mu.Lock()
	s.pos = keyframeAtOrAfter(idx, off-off%TSPacketSize)
	s.mu.Unlock()
}

// SetScale returns 1: elementary-stream sessions play at normal speed only.
func (s *ESStream) SetScale(float64) float64 { return 1 }

// Close stops the stream for good without calling OnEnd, but for a play
// that had already ended by itself and whose BYE was still to send: that
// BYE is cancelled and OnEnd hears the end then, as it would have after
// the BYE.
func (s *ESStream) Close() {
	s.mu.Lock()
	s.ended, s.closed = true, true
	s.bye.cancel()
	s.mu.Unlock()
	s.stop()
}

// Abort stops the stream for good without calling OnEnd (but as Close
// does, for a play that had ended by itself, its BYE still to send), and
// tells its client with an RTCP BYE carrying reason (RFC 3550 §6.6) on
// every track set up, after the track's last RTP packet, as Stream.Abort
// does: an RTSP player learns at once, not at its next keepalive, that a
// session the node ends on its own is gone (ffmpeg stops once every track
// has had its BYE). Over TCP the BYEs of a stream not playing are
// written at once when the connection's writer can take them; those it
// cannot (busy with a response, or its queue full) are handed, in track
// order, to a goroutine of their own that waits for the writer as a
// response does, up to the writer's timeout, rather than dropped (a
// connection that fails or closes meanwhile fails the write, and they are
// not sent), as Stream.Abort does. A play under way is stopped without
// waiting for it: its goroutine may be waiting to write a packet while
// the writer is busy (up to the writer's timeout); it sends nothing after
// that packet, and the BYEs go on that goroutine of their own once the
// play's goroutine has ended, after its last packet. Over UDP, whose
// sends do not wait for a writer, Abort waits for the play to stop. The
// BYEs, and a packet whose write waits, count in BytesSent once Abort
// returns, as a packet queued for the connection does, and are taken
// back if their write fails: read once the channel returned is closed
// (the session's end report is), BytesSent has them only if written (the
// engine's BytesSent counts them once written). Nothing is sent for a
// stream that had ended, unless its own BYEs (a failed play's) were still
// to send: the abort's go instead; a stream never played sends each BYE
// after an empty receiver report.
//
// The channel returned is closed once nothing more of the stream is to be
// written: at once unless BYEs wait for the writer or a play's goroutine
// is still under way over TCP, else once that goroutine has ended and the
// BYEs' write has ended (written, or failed). An RTSP connection answers
// a TEARDOWN only then, so that nothing of the stream follows the answer.
func (s *ESStream) Abort(reason string) <-chan struct{} {
	s.mu.Lock()
	ended := s.ended && !s.bye.pending() // told, or never to be
	s.ended, s.closed = true, true       // sendUnit sends nothing more
	// This BYE goes instead of one due, unless the writer had taken
	// that one already: told.
	if s.bye.cancel() {
		ended = true
	}
	cancel, done := s.cancel, s.done
	s.cancel, s.done, s.reading, s.play = nil, nil, nil, nil
	s.mu.Unlock()
	running := false
	if cancel != nil {
		cancel()
		if s.cfg.Mode == RTPTCP {
			select {
			case <-done:
			default:
				running = true // the BYEs wait for it
			}
		} else {
			<-done
		}
	}
	if ended {
		return closedChan
	}
	s.mu.Lock()
	bye := s.reportsLocked(reason)
	s.mu.Unlock()
	went := make([]bool, len(bye))
	if !running {
		went = s.sendRTCP(bye, false)
	}
	if s.cfg.Mode != RTPTCP {
		return closedChan
	}
	var frames []byte
	for i, b := range bye {
		if b != nil && !went[i] {
			frames = appendFrame(frames, uint8(s.tc[i].Channel+1), b)
		}
	}
	if len(frames) == 0 {
		if running {
			return done
		}
		return closedChan
	}
	// Counted when handed to the writer, as a queued packet is, so that
	// BytesSent read once Abort returns (the session's end report) has
	// them; in the engine's total once written (uncount).
	s.bytes.Add(int64(len(frames)))
	written := make(chan struct{})
	go func() {
		defer close(written)
		if running {
			<-done // after the play's last packet
		}
		if _, err := s.cfg.Conn.Write(frames); err != nil {
			s.uncount(int64(len(frames)))
		} else {
			s.e.bytesSent.Add(int64(len(frames)))
		}
	}()
	return written
}

// BytesSent returns the RTP and RTCP bytes sent (headers and interleaving
// included, UDP/IP headers not).
func (s *ESStream) BytesSent() int64 { return s.bytes.Load() }

func (s *ESStream) run(ctx context.Context, stopReading context.CancelFunc, rd *pacedReader, play *esPlay, seekTo float64, done chan struct{}) {
	defer close(done)
	rctx, stopReports := context.WithCancel(ctx)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		s.reportLoop(rctx)
	}()
	var err error
	if seekTo >= 0 {
		err = s.seekIndexed(ctx, rd, play, seekTo, done)
	}
	if err == nil {
		idx, _, _ := s.cfg.Source.State()
		hint := ptsNear(s.cfg.Source, rd.off)
		if hint < 0 && s.audioOnly(idx) {
			hint = clockOf{idx: idx}.at(rd.off) / 300 // PTS and PCR count one clock
		}
		play.setHint(hint)
		play.setJump(idx.JumpAt(rd.off))
		sent := make(chan error, 1)
		go func() {
			err := play.sendLoop(ctx, s.sendUnit)
			if err != nil {
				stopReading() // a failed send ends the play
			}
			sent <- err
		}()
		err = s.demux(rd, play)
		play.finish() // what was read is sent before the end
		if serr := <-sent; serr != nil {
			err = serr
		}
	}
	stopReading()
	stopReports() // none after the BYE
	<-reported
	if ctx.Err() != nil {
		return // stopped by Seek, Pause or Close
	}
	reason := EndError
	switch {
	case rd.readErr != nil:
		// Whatever the demuxer made of it (astits takes a short read for
		// the end of its input).
		reason, err = EndDiskRead, rd.readErr
	case errors.Is(err, io.EOF):
		reason, err = EndOfTitle, nil
		if rd.fillErr != nil {
			reason, err = EndError, rd.fillErr // the end of what the failed fill left
		}
	case errors.Is(err, ErrQueueFull):
		reason = EndSlow
	case connGone(err):
		reason = EndClosed
	}
	s.mu.Lock()
	if s.ended || s.done != done {
		s.mu.Unlock()
		return
	}
	end := func() {
		if s.cfg.OnEnd != nil {
			s.cfg.OnEnd(reason, err) // the callback may Close the stream
		}
	}
	if reason == EndOfTitle {
		// paused at the end: a Seek can take it back
		idx, _, _ := s.cfg.Source.State()
		s.pos = idx.Size
		s.endOfTitleByeLocked()
	} else {
		s.ended, s.endedBy, s.endErr = true, reason, err
		bye := ""
		if _, _, ferr := s.cfg.Source.State(); (ferr != nil || rd.fillErr != nil) && reason == EndError {
			bye = "fill failed" // the title's fill failed
		} else if reason == EndDiskRead {
			bye = string(EndDiskRead) // the title's file could not be read
		}
		if bye != "" {
			// The client is told the stream ends, as Stream tells it
			// (endWithBye): as the end of the title is told (byeLocked),
			// under s.mu, so that a Close or Abort meanwhile (the session
			// ended otherwise: a TEARDOWN) cancels the BYEs still to
			// send, which never follow its response. OnEnd once they went
			// (BytesSent counts them), were given up or cancelled.
			s.byeLocked(s.reportsLocked(bye), end)
			end = nil
		}
	}
	s.cancel, s.done, s.reading, s.play = nil, nil, nil, nil // nothing left to stop
	s.mu.Unlock()
	if end != nil {
		go end()
	}
}
