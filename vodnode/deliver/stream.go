package deliver

import (
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pion/rtp"

	"vodcluster/cdp/tsindex"
	"vodcluster/proto/rtspwire"
)

// Source is a title as the engine reads it (store.Title implements it).
type Source interface {
	// State returns the index of the bytes readable now (Index.Size), whether
	// the title is complete, and an error when no more bytes will come.
	State() (idx *tsindex.Index, complete bool, err error)
	// ReadAt reads title bytes below State's Index.Size.
	ReadAt(p []byte, off int64) (int, error)
	// Notify calls fn once when more than after bytes are readable, the title
	// is complete or failed; it returns false, not calling fn, if that is
	// already so.
	Notify(after int64, fn func()) bool
}

// Mode is how a stream's packets travel: the delivery of the SETUP's
// Transport entry (rtspwire.Delivery).
type Mode = rtspwire.Delivery

// Modes.
const (
	RTPUDP = rtspwire.RTPUDP // RTP over UDP (RTP/AVP, MP2T/RTP/UDP)
	RTPTCP = rtspwire.RTPTCP // RTP interleaved in the RTSP connection (RTP/AVP/TCP, MP2T/RTP/TCP)
	RawUDP = rtspwire.RawUDP // up to 7 TS packets per UDP datagram (fewer where the route's MTU is smaller), no RTP (MP2T/UDP, RAW/RAW/UDP)
)

// EndReason says why a stream ended by itself.
type EndReason string

// End reasons, as reported to the manager.
const (
	EndOfTitle EndReason = "end-of-title"      // every byte was sent, BYE sent; the stream waits paused at the end (Seek and Resume play on)
	EndError   EndReason = "error"             // the fill failed, a write to the client failed (its connection not gone), or the title cannot be played (no clock; no keyframes for trick play)
	EndSlow    EndReason = "slow-client"       // the connection held the stream back MaxLag
	EndClosed  EndReason = "connection-closed" // the client's TCP connection was closed or reset under the stream
	// EndDiskRead: a read of the title's file failed (an I/O error, or
	// the file shorter than its index: changed under the node); the
	// stream ends, its client told with an RTCP BYE carrying this reason,
	// and OnEnd's error is a *ReadError.
	EndDiskRead EndReason = "disk-read-error"
)

// writeEnd returns why a stream whose write to its client failed with err
// ends: EndClosed when the client's connection is gone (closed here,
// reset, a broken pipe: the client hung up while it was sent to, before
// the RTSP connection's reader saw it), EndError otherwise.
func writeEnd(err error) EndReason {
	if connGone(err) {
		return EndClosed
	}
	return EndError
}

// connGone reports whether err says the connection written to is gone.
func connGone(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// PayloadType is the RTP payload type of MPEG-TS (RFC 3551: MP2T, 90 kHz).
const PayloadType = 33

// StreamConfig describes one playback.
type StreamConfig struct {
	Source   Source
	Mode     Mode
	Dest     *net.UDPAddr // UDP modes: the client's media address
	RTCPDest *net.UDPAddr // RTPUDP: the client's RTCP address; nil = no RTCP
	Conn     *ConnWriter  // RTPTCP: the RTSP connection
	Channel  uint8        // RTPTCP: interleaved channel of RTP; RTCP uses Channel+1
	SSRC     uint32       // RTP synchronisation source
	Seq      uint16       // sequence number of the first RTP packet
	TSBase   uint32       // RTP timestamp (90 kHz) of the title's clock at offset 0
	Bitrate  int64        // bit/s; pacing for a title without PCR, and seeking into an unfilled part
	// OnEnd is called on a goroutine of its own when the stream stops by
	// itself: once for an error or a slow client, which end the stream
	// (not after Close; but a stream whose fill or read of its title
	// failed ends at once and OnEnd hears it after the RTCP BYE went,
	// ByeDelay later over UDP, whatever came meanwhile); at every end of
	// the title, after which the stream waits paused at the end.
	OnEnd func(reason EndReason, err error)
	// OnFillFailed, when set, is asked whether the title can be filled
	// again when the stream's normal play has reached the end of the
	// bytes its title's fill left before it failed (Source.State's
	// error), or its trick play (SetScale) steps with the fill failed,
	// wherever it stands, where the stream would end with an RTCP BYE
	// "fill failed".
	// It is called on a goroutine of its own, without the stream's lock
	// held (it may take its owner's locks and wait: a few seconds), and
	// at most once at a time; meanwhile the stream waits as it does for
	// the fill (WaitingForFill). It returns true when the Source was
	// filled again (State no longer fails: the stream plays on from where
	// it stands, its RTP timeline continuous, once the new fill brings
	// bytes); false ends the stream with its BYE "fill failed" (EndError)
	// as without it. A PLAY (Resume) asks again.
	OnFillFailed func() bool
}

// PlayInfo is what a PLAY response reports (RTP-Info and Range).
type PlayInfo struct {
	Seq     uint16  // sequence number of the next RTP packet
	RTPTime uint32  // RTP timestamp of the next RTP packet
	NPT     float64 // play position, seconds
}

// Errors of Stream.Play.
var (
	ErrRange = errors.New("deliver: start past the end of the title")
	ErrEnded = errors.New("deliver: stream ended")
)

type streamState int

const (
	stateReady streamState = iota
	statePlaying
	statePaused
	stateEnded
)

// Stream is one viewer's playback. Its methods are safe for concurrent use.
type Stream struct {
	e        *Engine
	sh       *shard
	cfg      StreamConfig
	pay      int // TS bytes per datagram: PayloadSize, less where the route's MTU is smaller (tsPayload)
	mu       sync.Mutex
	state    streamState
	pos      int64 // next byte to send
	seq      uint16
	queued   bool   // in its shard's lists
	parked   bool   // waiting for the fill
	gen      uint64 // bumped by Play; stale wake-ups are ignored
	anchored bool
	// readerStopped: held back by a player that stopped reading
	// (ConnWriter.ReaderStopped); until the connection takes a send again
	// the timeline restarts at every step, so that it restarts when the
	// player reads again. Written with mu held, read without it by
	// ReaderStopped.
	readerStopped atomic.Bool
	stop          readerStop // how long it was readerStopped (ReaderStoppedFor)
	stoppedRetry  int64      // engine ns: while readerStopped, when to try the connection again
	anchorWall    int64      // engine ns at which anchorClock was due
	anchorClock   int64      // 27 MHz
	clock0        int64      // stream clock at offset 0, 27 MHz
	haveClock0    bool
	nextSR        int64
	packets       uint32
	octets        uint32
	scale         float64 // 1 (or 0): normal play; otherwise trick play
	kf            int     // trick play: index of the next keyframe, -1 = from pos
	anchorPTS     int64   // trick play: PTS (90 kHz) due at anchorWall
	trickPic      []byte  // trick play: the tables and the picture being sent (readPicture)
	trickAt       int64   // trick play: offset of trickPic's keyframe; -1 = none read
	trickSent     int     // trick play: bytes of trickPic sent
	trickRd       int64   // trick play: offset of trickPic's picture read up to; -1 = read whole
	trickStarted  bool    // trick play: trickPic's picture's PES start read
	trickRead     []byte  // trick play: readPicture's scratch (pictureRead bytes)
	trickFree     int64   // trick play: engine ns from which the title's bitrate allows the next picture
	trickCC       ccRun   // trick play: the continuity counters sent, per PID
	psi           []byte  // the title's PAT and PMT packets
	psiLoaded     bool
	injectPSI     bool        // send psi before the next bytes (after a seek)
	psiSeek       []byte      // psi with the counters ContinuePSI set for psiSeekAt
	psiSeekAt     int64       // offset psiSeek was made for (when psiSeek is not nil)
	seekTo        float64     // npt of a seek into the part not yet filled, moved to its keyframe once indexed; < 0: none
	seekRTP       uint32      // the RTP timestamp answered for seekTo (RTP-Info's rtptime, seekRTPTime)
	tsAdjust      uint32      // 90 kHz ticks added to the RTP timestamps of the PCR: set where a seek into the part not filled starts (startAsAnswered), 0 after any other seek
	stopNPT       float64     // normal play pauses here (a PLAY Range's end), seconds; < 0: none
	idleTimer     *time.Timer // the next sender report while it sends nothing (idleReportLocked); nil: none due
	bye           byeDue      // the BYE still to send, of the end of the title or of a play that failed (byeLocked)
	closed        bool        // Close or Abort was called: a BYE still due of a stream that ended on its own is not sent (endWithBye)
	endedBy       EndReason   // why it ended by itself (finish, endWithBye; EndedBy), "" while it has not
	endErr        error       // the error it ended by itself with
	resize        atomic.Bool // the kernel refused a datagram of pay bytes (the route's MTU shrank since): pay is asked again (step)
	refilling     bool        // OnFillFailed is being asked (refillFailed)
	refused       bool        // OnFillFailed answered false since the last Resume: the stream ends at the failed fill's end

	bytes atomic.Int64
}

// NewStream returns a stream in the ready state; Play starts it. Errors:
// the engine is not running, or cfg is incomplete for its Mode.
func (e *Engine) NewStream(cfg StreamConfig) (*Stream, error) {
	if !e.started {
		return nil, ErrNotStarted
	}
	if cfg.Source == nil {
		return nil, errors.New("deliver: stream without source")
	}
	switch cfg.Mode {
	case RTPUDP, RawUDP:
		if cfg.Dest == nil || e.UDP == nil {
			return nil, errors.New("deliver: UDP stream without destination or UDP ports")
		}
	case RTPTCP:
		if cfg.Conn == nil || cfg.Channel == 255 {
			return nil, errors.New("deliver: TCP stream without connection")
		}
	default:
		return nil, fmt.Errorf("deliver: unknown mode %d", cfg.Mode)
	}
	sh := e.shards[e.next.Add(1)%uint32(len(e.shards))]
	return &Stream{e: e, sh: sh, cfg: cfg, pay: streamPayload(cfg), seq: cfg.Seq, scale: 1, kf: -1, trickAt: -1, stopNPT: -1, seekTo: -1}, nil
}

func (s *Stream) clock(idx *tsindex.Index, complete bool) clockOf {
	c := clockOf{idx: idx}
	if complete {
		c.bitrate = s.cfg.Bitrate
	}
	return c
}

// Play starts or resumes the stream: Seek(npt), then Resume.
func (s *Stream) Play(npt float64) (PlayInfo, error) {
	info, err := s.Seek(npt)
	if err != nil {
		return info, err
	}
	s.Resume()
	return info, nil
}

// Resume starts sending from the current position, on the stream's own
// timeline restarting now.
func (s *Stream) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateEnded {
		return
	}
	s.bye.cancel()
	s.state = statePlaying
	s.anchored = false
	s.readerBackLocked(time.Now())
	s.parked = false
	s.refused = false // a PLAY asks for a refill again (OnFillFailed)
	s.gen++
	if s.nextSR == 0 {
		s.nextSR = s.e.now() + int64(s.e.SRInterval)/5
	}
	if !s.queued {
		s.queued = true
		s.sh.add(s)
	}
}

// Pause stops sending and returns the position, seconds; Play(-1) resumes
// there.
func (s *Stream) Pause() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == statePlaying {
		s.state = statePaused
		s.idleReportLocked()
	}
	s.readerBackLocked(time.Now()) // paused now: no player waited for
	if s.trickAt < 0 {
		s.trickPic, s.trickRead = nil, nil // a paused trick play keeps no picture's memory (up to maxPicture)
	}
	return s.positionLocked()
}

// Position returns the play position, seconds.
func (s *Stream) Position() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.positionLocked()
}

func (s *Stream) positionLocked() float64 {
	if s.seekTo >= 0 {
		return s.seekTo // a seek into the part not indexed yet: not started there yet
	}
	idx, complete, _ := s.cfg.Source.State()
	ck := s.clock(idx, complete)
	if !ck.ok() {
		return 0
	}
	return ck.npt(s.pos)
}

// Playing reports whether the stream is playing (not ready, paused or ended).
func (s *Stream) Playing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == statePlaying
}

// ReaderStopped reports whether the stream, playing over TCP, waits for
// a player that stopped reading while its host answers (a player paused
// without a PAUSE, as mpv is: ConnWriter.ReaderStopped), from the moment
// its queue has been held back MaxLag until the connection takes a send
// again. It takes no lock: safe under its owner's locks.
func (s *Stream) ReaderStopped() bool { return s.readerStopped.Load() }

// AtEnd reports whether the stream waits at the end of its title, where
// its play ended (EndOfTitle, BYE sent) and no Seek has moved it since: a
// normal play from there has nothing to send.
func (s *Stream) AtEnd() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != statePaused || s.seekTo >= 0 {
		return false
	}
	idx, complete, err := s.cfg.Source.State()
	return err == nil && complete && idx.Size > 0 && s.pos >= idx.Size
}

// Close stops the stream for good without calling OnEnd, but for a play
// that had already ended by itself and whose BYE was still to send: that
// BYE is cancelled and OnEnd hears the end then, as it would have after
// the BYE.
func (s *Stream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.closed = stateEnded, true
	s.stopIdleReportLocked()
	s.bye.cancel()
}

// Abort stops the stream for good without calling OnEnd (but as Close
// does, for a play that had ended by itself, its BYE still to send),
// and tells its client with an RTCP BYE carrying reason (RFC 3550 §6.6)
// that the stream ends: an RTSP player learns at once, not at its next
// keepalive, that a session the node ends on its own is gone. Over TCP
// the BYE is written at once when the connection's writer can take it;
// when it cannot (busy with a response, or its queue full), on a
// goroutine of its own that waits for the writer as a response does, up
// to the writer's timeout, rather than drop it (a connection that fails
// or closes meanwhile fails the write, and the BYE is not sent). Abort
// itself does not wait; the BYE counts in BytesSent once Abort returns
// (as a packet queued for the connection does), and is taken back there
// if its write fails: read once the channel returned is closed (the
// session's end report is), BytesSent has it only if written. The
// engine's BytesSent counts it once written, never taking bytes back.
// Nothing is sent in RawUDP mode or for a stream that had ended, unless
// its own BYE (endWithBye's) was still to send: this one goes instead.
//
// The channel returned is closed once nothing more of the stream is to be
// written: at once unless the BYE waits for the writer, else once its
// write ended (written, or failed). An RTSP connection answers a TEARDOWN
// only then, so that the BYE does not follow the answer.
func (s *Stream) Abort(reason string) <-chan struct{} {
	s.mu.Lock()
	ended := s.state == stateEnded && !s.bye.pending() // told, or never to be
	s.state, s.closed = stateEnded, true
	s.stopIdleReportLocked()
	// This BYE goes instead of one due, unless the writer had taken
	// that one already: told.
	if s.bye.cancel() {
		ended = true
	}
	s.mu.Unlock()
	if ended || s.abortBye(reason) {
		return closedChan
	}
	// Counted when handed to the writer, as a queued packet is, so that
	// BytesSent read once Abort returns (the session's end report) has it;
	// in the engine's total once written.
	frame := appendFrame(nil, s.cfg.Channel+1, abortByePacket(s.cfg.SSRC, reason))
	n := int64(len(frame))
	s.bytes.Add(n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.cfg.Conn.Write(frame); err != nil {
			s.bytes.Add(-n) // not sent
			return
		}
		s.e.bytesSent.Add(n)
	}()
	return done
}

// WaitingForFill reports whether the stream plays but has caught up with
// its title's fill: it sends nothing until more bytes arrive (a client
// then has nothing to answer with receiver reports).
func (s *Stream) WaitingForFill() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parked && s.state == statePlaying
}

// BytesSent returns the bytes sent for this stream (headers included).
func (s *Stream) BytesSent() int64 { return s.bytes.Load() }

// endOfTitle sends the final sender report and BYE (byeLocked: over UDP
// ByeDelay later, after the last packets, which the shard flushes only
// after this step; over TCP at once, or, when the connection's writer
// cannot take it then, before its next write, which a PLAY's Seek,
// Resume, Close or Abort meanwhile cancels) and leaves the stream paused
// at the end, where a Seek can take it back (RFC 2326 §10.5: the session
// lives on until TEARDOWN); OnEnd hears EndOfTitle. s.mu held.
func (s *Stream) endOfTitle(ck clockOf) {
	s.byeLocked(s.byePacket(ck), nil)
	s.state = statePaused
	s.queued = false
	s.kf = -1
	if s.cfg.OnEnd != nil {
		go s.cfg.OnEnd(EndOfTitle, nil)
	}
}

func (s *Stream) finish(reason EndReason, err error) {
	s.state, s.endedBy, s.endErr = stateEnded, reason, err
	s.queued = false
	s.stopIdleReportLocked()
	s.bye.cancel()
	if s.cfg.OnEnd != nil {
		go s.cfg.OnEnd(reason, err)
	}
}

func (s *Stream) setClock0(ck clockOf) {
	if !s.haveClock0 {
		s.clock0, s.haveClock0 = ck.at(0), true
	}
}

// rtpTime returns the RTP timestamp (90 kHz) of offset off.
func (s *Stream) rtpTime(ck clockOf, off int64) uint32 {
	return s.cfg.TSBase + uint32((ck.at(off)-s.clock0)/300) + s.tsAdjust
}

// startAsAnswered stamps the play of a seek into the part not filled
// when it was answered, starting now at s.pos (npt's keyframe, once
// indexed), with the timestamps that answer gave: its first packet
// carries RTP-Info's rtptime moved on by the time from the npt asked to
// the keyframe's (RFC 2326 §12.33: rtptime is the timestamp of the
// Range's npt, the client's mapping of RTP time to npt). The timestamps
// run on the PCR, which a multiplexer sends ahead of the PTS by a delay
// that varies along a title (0 to 0.26 s in the sample titles, more in
// others): taken from the end of the bytes indexed when the PLAY was
// answered, rtptime was that variation off the keyframe's packets.
func (s *Stream) startAsAnswered(ck clockOf) {
	s.tsAdjust = 0
	want := s.seekRTP + uint32(int64(math.Round((ck.npt(s.pos)-s.seekTo)*90000)))
	s.tsAdjust = want - s.rtpTime(ck, s.pos)
}

// header writes the RTP header of the packet with sequence number seq
// starting at offset off into h (12 bytes).
func (s *Stream) header(h []byte, ck clockOf, seq uint16, off int64) {
	rh := rtp.Header{Version: 2, PayloadType: PayloadType, SequenceNumber: seq,
		Timestamp: s.rtpTime(ck, off), SSRC: s.cfg.SSRC}
	rh.MarshalTo(h)
}
