package vodnode

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"vodcluster/proto/monotime"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// udpKey is a client's UDP address (media or RTCP port).
type udpKey = netip.AddrPort

// session is one RTSP session: one viewer's playback of one title.
type session struct {
	id      string // RTSP session id
	sid     string // admission session id (the token's sid)
	title   string
	meta    store.Meta
	expires time.Time // the token's expiry
	// cur is the copy of the title the session holds (t): the one
	// acquired at SETUP, or the one a PLAY acquired again after its
	// fill failed for the origin (refillRTSP).
	cur        atomic.Pointer[store.Title]
	player     player        // nil until an ES session's first PLAY; set under ctl and Node.mu
	es         *esSession    // elementary-stream sessions only
	spec       transportSpec // the (first) track's transport
	conn       *rtspConn     // the connection that set it up
	peers      []udpKey      // UDP: the client's media and RTCP addresses
	controlURL string        // the SETUP URL, echoed in RTP-Info
	rtsps      bool          // set up over RTSPS (RTSP over TLS)
	// ahead is the stream's Source (its title, and what a play far ahead
	// of the fill reads from the origin): an MP2T session's from SETUP,
	// an ES session's from its first PLAY (set with player, under the
	// node's mu).
	ahead *aheadSource

	lastSeen atomic.Int64 // monotime.Now of the last request or RTCP packet, or of the node's keep (its timeout counts from it)
	// heard is monotime.Now of the viewer's own last sign of life (a
	// request, an RTCP packet: touch), not moved by keep: the end of a
	// session that times out.
	heard atomic.Int64
	// meter is its stream's byte count (the player's BytesSent, a
	// func() int64) once it has a stream; seenBytes is what it gave at
	// the viewer's last sign of life (touch): a UDP session that times
	// out reports that (reportEnd).
	meter     atomic.Value
	seenBytes atomic.Int64
	paused    atomic.Bool // PAUSEd by its client and not played since: it lives PauseTimeout without a word
	// pause is how long it was PAUSEd since its start (with its
	// stream's ReaderStoppedFor, the ENDED's paused_ms).
	pause pauseClock
	// atEnd: its play reached the end of the title (deliver.EndOfTitle)
	// and no PLAY came since: the stream waits there (the load report's
	// finished_sessions).
	atEnd atomic.Bool

	// ctl serialises PLAY, PAUSE and the SETUP of a further ES track:
	// any connection may name the session, so two may race.
	ctl sync.Mutex
	// endedHere: guarded by ctl; its last PLAY, libavformat's past the
	// end of a title still filling, was answered with the end-of-title
	// BYE at once (lavfEndHere), the stream where it stands: a PLAY
	// without a start then is at the end too.
	endedHere bool
	// readError counts and logs its stream's failed read of the title's
	// file once (streamEnded); a second caller waits for the first's log,
	// so that the warning comes before the session's ENDED.
	readError sync.Once
	// refillAfter: a refill refused (refillRTSP) is not tried again
	// before then (under ctl).
	refillAfter time.Time

	// guarded by Node.mu
	started   bool      // PLAY seen, STARTED reported
	startedAt time.Time // when STARTED was reported
	ended     bool
	// retired are the copies whose fill failed that the session held
	// before a refill (refillRTSP), released when it ends.
	retired []*store.Title
}

// keep keeps s alive at now for a silence that is the node's (its stream
// waiting for the title's fill): its timeout counts from now, but its end,
// should it time out, stays at the viewer's last sign of life (heard).
func (s *session) keep(now time.Time) { s.lastSeen.Store(monotime.Of(now)) }

// t returns the copy of the title s holds (nil until its SETUP acquired
// one).
func (s *session) t() *store.Title { return s.cur.Load() }

// touch notes a sign of life of s's viewer at now, and the bytes its
// stream had sent by then.
func (s *session) touch(now time.Time) {
	s.lastSeen.Store(monotime.Of(now))
	s.heard.Store(monotime.Of(now))
	if f, _ := s.meter.Load().(func() int64); f != nil {
		s.seenBytes.Store(f())
	}
}

func newSessionID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lookupSession returns the live session with RTSP id id.
func (n *Node) lookupSession(id string) *session {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessions[id]
}

// endSession ends s once: stops its stream, releases its title and its
// bandwidth, remembers its token as used, and reports ENDED.
func (n *Node) endSession(s *session, reason string, cause error) {
	n.finishSession(s, reason, cause, nil, false)
}

// abortSession ends s like endSession, on the node's own initiative (the
// manager's order), and tells its RTSP client with an RTCP BYE carrying
// reason on each of its tracks (MP2T or elementary streams, played or
// only set up), so that the player stops at once rather than at its next
// keepalive. False when s had ended.
func (n *Node) abortSession(s *session, reason string) bool {
	return n.finishSession(s, reason, nil, nil, true)
}

// replaceSession ends s for next, a new session of the same admission
// session set up over the same connection, which takes over its claim:
// nothing is reported and the token is not spent. False when s had ended.
func (n *Node) replaceSession(s, next *session) bool {
	return n.finishSession(s, "replaced by a new SETUP on its connection", nil, next, false)
}

// finishSession ends s once (false if it had ended): stops its stream
// (with an RTCP BYE carrying reason when bye is set), releases its title
// and bandwidth and, without a successor (next nil), spends its token and
// reports ENDED (reportEnd: once nothing more of its stream is to be
// written, so that bytes_sent has only what was). A BYE its stream writes on a goroutine of its own (the
// connection's writer busy) holds back every answer on s's connection
// (rtspConn.aborting, rtspConn.write) from the moment s leaves the node's
// sessions, which a request naming it then answers 454, until nothing
// more of the stream is to be written.
func (n *Node) finishSession(s *session, reason string, cause error, next *session, bye bool) bool {
	n.mu.Lock()
	if s.ended {
		n.mu.Unlock()
		return false
	}
	s.ended = true
	delete(n.sessions, s.id)
	for _, k := range s.peers {
		if n.udpPeers[k] == s {
			delete(n.udpPeers, k)
		}
	}
	n.unreserveLocked(s.meta.Bitrate)
	if next != nil {
		if n.live[s.sid] == any(s) {
			n.live[s.sid] = next
		}
	} else {
		n.releaseLocked(s.sid, s, s.expires)
	}
	var written func()
	if bye && s.conn != nil {
		written = s.conn.aborting()
	}
	p, ahead := s.player, s.ahead                       // an ES session's first PLAY sets them under mu, unless ended
	held := append([]*store.Title{s.t()}, s.retired...) // no refill swaps them once ended
	s.retired = nil
	n.mu.Unlock()
	if f := n.abortHook; f != nil && bye {
		f() // a test's hook: s gone from the node's sessions, its stream not aborted yet
	}

	var quiet <-chan struct{}
	switch {
	case p != nil && bye:
		quiet = p.Abort(reason)
	case p != nil:
		p.Close()
	case bye && s.es != nil:
		quiet = n.abortES(s, reason) // set up, not played yet: no stream
	}
	if e, ok := p.(interface {
		EndedBy() (deliver.EndReason, error)
	}); ok && next == nil {
		if r, err := e.EndedBy(); r != "" {
			// Its stream had ended by itself (a read of the title's file
			// or its fill failed): that is why s ends, though
			// onStreamEnd, which hears it only once the RTCP BYE telling
			// the client went, has not run yet; ffmpeg answers the BYE
			// with a TEARDOWN that can come first.
			reason, cause = string(n.streamEnded(s, r, err)), err
		}
	}
	if written != nil {
		whenClosed(quiet, written)
	}
	if ahead != nil {
		ahead.close() // its origin reads stop writing into the title's file
	}
	for _, t := range held {
		n.store.Release(t)
	}
	var unacked int64
	if s.conn != nil {
		if s.spec.Mode == deliver.RTPTCP && (reason == "timeout" || reason == string(deliver.EndSlow)) {
			unacked = s.conn.unackedFor(s)
		}
		s.conn.forget(s)
	}
	at := time.Now()
	if reason == "timeout" {
		// The viewer's last sign of life, not the timeout's, nor the
		// node's keep while the stream waited for the fill: what it was
		// sent since is not known to have reached it (reportEnd).
		at = monotime.Wall(s.heard.Load())
	}
	if next == nil && errors.Is(cause, store.ErrFillFailed) && (ahead == nil || !ahead.gave.Load()) {
		// Its title's fill failed before the session was sent any of
		// the title (fillfail.go): ended at its start, if it started.
		reason = fillFailedReason(cause)
		n.mu.Lock()
		if s.started {
			at = s.startedAt
		}
		n.mu.Unlock()
	}
	// The bytes are read, and the end reported, once nothing more of the
	// stream is to be written (at once but for an abort whose BYE, or a
	// packet of a play under way, waits for a busy connection writer, up
	// to its timeout): a write that fails then is taken back from the
	// stream's BytesSent, so that bytes_sent counts only what was written.
	reported := n.ends.add()
	whenClosed(quiet, func() {
		defer reported()
		n.reportEnd(s, p, reason, cause, next, at, unacked)
	})
	return true
}

// pendingEnds counts the sessions ended whose end is not reported yet
// (finishSession: an aborted session's stream still writing), so that
// Close reports them to the manager before it closes its link.
type pendingEnds struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while it is 0
}

// add counts one end to report; the caller calls the function returned
// (once) when it is reported.
func (p *pendingEnds) add() func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		p.idle = make(chan struct{})
	}
	p.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.n--; p.n == 0 {
				close(p.idle)
				p.idle = nil
			}
		})
	}
}

// wait waits until no end is left to report, up to d; false when some
// still were then.
func (p *pendingEnds) wait(d time.Duration) bool {
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	if idle == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

// reportEnd logs the end of s, whose playback p (nil: none) has written
// all it will, and, without a successor (next nil), reports ENDED with
// the bytes p sent, at at. unacked: bytes its TCP connection held that
// the peer had not acknowledged when the session timed out or was ended
// as a slow client (rtspConn.unackedFor), not counted.
func (n *Node) reportEnd(s *session, p player, reason string, cause error, next *session, at time.Time, unacked int64) {
	var bytes int64
	if p != nil {
		bytes = p.BytesSent()
		switch {
		case reason == "timeout" && s.spec.Mode != deliver.RTPTCP:
			// Over UDP nothing says what reached a viewer gone silent
			// (killed without a TEARDOWN, its datagrams drawing ICMP
			// port unreachables): it is counted to its last sign of
			// life, as its end (at) is, not for the timeout the node
			// went on sending.
			bytes = min(bytes, s.seenBytes.Load())
		case reason == "timeout" || reason == string(deliver.EndSlow):
			// Over TCP the peer's acknowledgements say: what its
			// connection held unacknowledged (queued at the node, or
			// in its socket) when it timed out or fell hopelessly
			// behind (a frozen player's, a box whose power went) is not
			// counted; a slow client's connection is reset, so that
			// none of it is delivered after.
			bytes = max(bytes-unacked, 0)
		}
	}
	attrs := []any{"session", s.id, "sid", s.sid, "title", s.title, "reason", reason, "bytes", bytes}
	if cause != nil {
		attrs = append(attrs, "err", cause)
	}
	paused := s.pause.until(at)
	if rs, ok := p.(interface {
		ReaderStoppedFor(end time.Time) time.Duration
	}); ok {
		// Over TCP, a player paused without a PAUSE (it stopped
		// reading: mpv): never at once with a PAUSE (the stream's
		// pause ends that wait).
		paused += rs.ReaderStoppedFor(at)
	}
	if paused > 0 {
		attrs = append(attrs, "paused", paused)
	}
	n.log.Info("session ended", attrs...)
	if n.mgr != nil && next == nil {
		n.mgr.report(&pb.SessionEvent{
			NodeId: n.ID, SessionId: s.sid, TitleId: s.title, Kind: pb.SessionEvent_KIND_ENDED,
			Reason: reason, BytesSent: bytes, AtUnixMs: at.UnixMilli(), PausedMs: paused.Milliseconds(),
		})
	}
}

// whenClosed runs f once ch is closed: at once when it is (or is nil),
// else on a goroutine of its own.
func whenClosed(ch <-chan struct{}, f func()) {
	select {
	case <-ch:
	default:
		if ch != nil {
			go func() {
				<-ch
				f()
			}()
			return
		}
	}
	f()
}

// player is a session's playback: MP2T (deliver.Stream) or elementary
// streams (deliver.ESStream).
type player interface {
	Seek(npt float64) ([]deliver.PlayInfo, error) // one entry per track
	Resume()
	Pause() float64
	SetScale(scale float64) float64
	Close()
	// Abort is Close, telling the client with an RTCP BYE; the channel
	// is closed once nothing more of the stream is to be written.
	Abort(reason string) <-chan struct{}
	BytesSent() int64
	WaitingForFill() bool // playing, caught up with the title's fill
}

var (
	_ player         = tsPlayer{}
	_ player         = esPlayer{}
	_ deliver.Source = (*store.Title)(nil)
)

// tsPlayer is an MP2T playback.
type tsPlayer struct{ *deliver.Stream }

func (p tsPlayer) Seek(npt float64) ([]deliver.PlayInfo, error) {
	i, err := p.Stream.Seek(npt)
	return []deliver.PlayInfo{i}, err
}

// esPlayer is an elementary-stream playback.
type esPlayer struct{ *deliver.ESStream }

func (p esPlayer) Seek(npt float64) ([]deliver.PlayInfo, error) {
	return p.ESStream.SeekTracks(npt)
}

// onStreamEnd is the delivery engine's callback for a stream that stopped
// by itself. At the end of the title (RTCP BYE sent) the session stays,
// paused at the end, until TEARDOWN or its timeout (RFC 2326 §10.5, and a
// PLAY with Range may take it back); a fill error, a read of the title's
// file that failed (RTCP BYE sent; counted and logged, streamReadError)
// or a slow client end it.
func (n *Node) onStreamEnd(s *session) func(deliver.EndReason, error) {
	return func(r deliver.EndReason, err error) {
		if f := n.streamEndHook; f != nil {
			f() // a test's hook: the stream ended, its end not handled yet
		}
		r = n.streamEnded(s, r, err)
		if r == deliver.EndOfTitle {
			// Unless a PLAY has moved it since (this callback runs on
			// its own): a session playing again is not finished.
			s.ctl.Lock()
			if e, ok := s.player.(interface{ AtEnd() bool }); !ok || e.AtEnd() || s.endedHere {
				s.atEnd.Store(true)
			}
			s.ctl.Unlock()
			n.log.Info("end of title; session kept until TEARDOWN or timeout", "session", s.id, "sid", s.sid, "title", s.title)
			return
		}
		n.endSession(s, string(r), err)
		if r == deliver.EndSlow && s.conn != nil && s.spec.Mode == deliver.RTPTCP {
			// The connection is hopelessly behind: reset, what it
			// holds unacknowledged dropped, as its count has it
			// (reportEnd).
			deliver.ResetNow(s.conn.nc)
		}
	}
}

// streamEnded returns the reason s ends for, its stream having ended by
// itself with r and err: a read of the title's file that failed is
// counted and logged (streamReadError) once, whoever sees it first
// (onStreamEnd, or finishSession for a request that ended s before
// onStreamEnd ran), before either goes on to end s; one that failed because the title was closed under
// the stream is EndError, not the disk's failure.
func (n *Node) streamEnded(s *session, r deliver.EndReason, err error) deliver.EndReason {
	if r != deliver.EndDiskRead {
		return r
	}
	if errors.Is(err, store.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, store.ErrFillFailed) {
		return deliver.EndError // its fill stopped under a play far ahead of it (aheadSource.ReadAt)
	}
	s.readError.Do(func() { n.streamReadError(s, err) })
	return r
}

// streamReadError counts in vodnode_disk_read_errors_total, as an HTTP
// send's (diskReadError), a read of s's title file that failed under its
// RTSP stream (err: a *deliver.ReadError; io.ErrUnexpectedEOF: the file
// ended short of the bytes its index has) and logs it as a warning naming
// the title and the session; the session then ends with reason
// deliver.EndDiskRead. The store checks the copy (store.Store.ReadFailed:
// one cut short or unreadable is dropped, to be filled again).
func (n *Node) streamReadError(s *session, err error) {
	n.send.diskErrors.Add(1)
	attrs := []any{"title", s.title, "session", s.id, "sid", s.sid}
	if re := (*deliver.ReadError)(nil); errors.As(err, &re) {
		attrs = append(attrs, "offset", re.Off, "err", re.Err)
	} else {
		attrs = append(attrs, "err", err)
	}
	n.log.Warn("reading a title's file failed during an RTSP stream: the session ends", attrs...)
	if t := s.t(); t != nil {
		n.store.ReadFailed(t, err)
	}
}

// janitor ends RTSP sessions idle for SessionTimeout and HTTP sessions
// idle for PauseTimeout, forgets used tokens once
// they expire, and writes the spent tokens to usedTokensFile every
// usedSavePeriod when they changed.
func (n *Node) janitor() {
	defer n.wg.Done()
	period := min(time.Second, n.SessionTimeout/4)
	t := time.NewTicker(period)
	defer t.Stop()
	var saved time.Time // usedTokensFile last written
	for {
		select {
		case <-n.ctx.Done():
			return
		case now := <-t.C:
			type idleSession struct {
				s *session
				p player
			}
			var idle []idleSession
			var idleHTTP []*httpSession
			n.mu.Lock()
			for _, s := range n.sessions {
				limit := n.SessionTimeout
				if s.paused.Load() {
					// A player paused may stop its keepalives (ffplay
					// reads nothing while paused, gortsplib's client
					// stops them): it lives as long as a paused HTTP
					// viewer does.
					limit = n.PauseTimeout
				}
				silent := now.Sub(monotime.Time(s.lastSeen.Load()))
				if silent > limit && limit < n.PauseTimeout && s.spec.Mode == deliver.RTPTCP && s.conn != nil && s.conn.cw.PeerHolding() {
					// Silent, its player's TCP holding the stream back,
					// its host alive: a player paused without a PAUSE
					// (mpv stops reading, and so sends no RTCP report or
					// keepalive) lives as a paused one does. One taking
					// the stream without a word is timed out as before.
					limit = n.PauseTimeout
					n.silentKept.Add(1)
				}
				if silent > limit {
					idle = append(idle, idleSession{s, s.player})
				}
			}
			for _, hs := range n.httpSessions {
				if hs.active.Load() == 0 && now.Sub(monotime.Time(hs.lastSeen.Load())) > n.PauseTimeout {
					idleHTTP = append(idleHTTP, hs)
				}
			}
			for sid, e := range n.used {
				if now.After(e.until) {
					delete(n.used, sid)
				}
			}
			n.mu.Unlock()
			if now.Sub(saved) >= usedSavePeriod {
				n.saveUsedTokens(now, false)
				saved = now
			}
			for _, c := range idle {
				if c.p != nil && c.p.WaitingForFill() {
					// The silence is the node's: it has sent nothing since
					// the stream caught up with the fill (or before the
					// fill's first byte), so the client has no RTP to
					// answer with receiver reports. Kept alive, but
					// not heard: should it time out later, it ends at
					// its own last sign of life (a viewer gone since
					// is sent nothing it is counted).
					c.s.keep(now)
					continue
				}
				n.endSession(c.s, "timeout", nil)
				if conn := c.s.conn; conn != nil {
					// Its connection, idle too, closes now rather than
					// at its own read deadline a timeout later (a player
					// answered 457 and silent waits for the close);
					// one with a request in flight (a new SETUP arriving
					// just then) once it is answered, if it set up no
					// session.
					conn.closeIfIdle()
				}
			}
			for _, hs := range idleHTTP {
				n.endHTTPSessionIf(hs, "idle", func() bool { // still idle
					return hs.active.Load() == 0 && now.Sub(monotime.Time(hs.lastSeen.Load())) > n.PauseTimeout
				})
			}
		}
	}
}

// readUDP reads what clients send to the node's RTP or RTCP port (receiver
// reports, NAT keepalives): each packet keeps its session alive.
func (n *Node) readUDP(c *net.UDPConn) {
	defer n.wg.Done()
	buf := make([]byte, 2048)
	for {
		_, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if n.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		key := netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		n.mu.Lock()
		s := n.udpPeers[key]
		n.mu.Unlock()
		if s != nil {
			s.touch(time.Now())
		}
	}
}
