package vodnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/rtspwire"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

func (c *rtspConn) setup(req *base.Request) (*base.Response, *rtspError) {
	if sessionHeader(req) != "" {
		return c.setupInSession(req)
	}
	tg, err := requestTarget(req.URL)
	if err != nil {
		return nil, err
	}
	if !tg.ES && tg.Track > 0 {
		return nil, fixableErr(base.StatusNotFound, "no track %d (the title has trackID=0 only)", tg.Track)
	}
	claims, err := c.n.verifyStart(tg, c.remote, c.proto())
	if err != nil {
		return nil, err
	}
	s := &session{id: newSessionID(), sid: claims.Session, title: tg.Title, conn: c, controlURL: req.URL.String(), rtsps: c.overTLS()}
	if claims.ExpiresAt != nil {
		s.expires = claims.ExpiresAt.Time
	}
	if err := c.n.claim(s.sid, s); err != nil {
		// the viewer sets its session up again on its connection: the new
		// session takes the old one's place (one at a time)
		old := c.n.liveOn(s.sid, c)
		if old == nil {
			return nil, err
		}
		if !c.n.replaceSession(old, s) {
			if err := c.n.claim(s.sid, s); err != nil {
				return nil, err
			}
		}
	}
	// from here on a refusal ends the admission session (refuseStart)
	var reserved, acquired bool
	fail := func(e *rtspError) (*base.Response, *rtspError) {
		if s.player != nil {
			s.player.Close()
		}
		c.forget(s)
		if acquired {
			c.n.store.Release(s.t())
		}
		if reserved {
			c.n.unreserve(s.meta.Bitrate)
		}
		if retryable(e) {
			c.deferRefusal(s, e)
		} else {
			c.n.refuseStart(s.sid, s.title, s.expires, s, e)
		}
		return nil, e
	}
	tv := req.Header["Transport"]
	if rtspwire.NoTransport(tv) {
		return fail(rtspErr(base.StatusBadRequest, "missing Transport header"))
	}
	if c.n.draining.Load() {
		return fail(unavailable(nil, "node draining"))
	}
	specs, perr := c.transportsOf(tv, tg.ES)
	if perr != nil {
		return fail(rtspErr(base.StatusUnsupportedTransport, "%v", perr))
	}
	s.spec = specs[0]

	ctx, cancel := context.WithTimeout(c.n.ctx, requestTimeout)
	defer cancel()
	meta, serr := c.n.store.Lookup(ctx, tg.Title)
	if serr != nil {
		return fail(storeError(serr))
	}
	s.meta = meta
	if err := c.n.reserve(meta.Bitrate); err != nil {
		return fail(err)
	}
	reserved = true
	t, serr := c.n.store.Acquire(ctx, tg.Title)
	if serr != nil {
		return fail(storeError(serr))
	}
	s.cur.Store(t)
	acquired = true
	if err := c.n.adoptHeldMeta(s.t(), &s.meta); err != nil {
		return fail(err)
	}
	s.touch(time.Now())
	var ssrc uint32
	if tg.ES {
		tr, rerr := c.n.esTracksOf(ctx, s.t())
		if rerr != nil {
			return fail(rerr)
		}
		i, rerr := esTrack(tr, tg.Track)
		if rerr != nil {
			return fail(rerr)
		}
		s.es = newESSession(tr)
		if rerr := c.addESTrack(s, i, specs, req.URL.String()); rerr != nil {
			return fail(rerr)
		}
		s.spec = *s.es.specs[i]
	} else {
		if aerr := c.adopt(s, specs, &s.spec); aerr != nil {
			return fail(aerr)
		}
		st, cfg, serr := c.newStream(s)
		if serr != nil {
			return fail(rtspErr(base.StatusInternalServerError, "%v", serr))
		}
		s.player, ssrc = tsPlayer{st}, cfg.SSRC
		s.meter.Store(st.BytesSent)
	}
	if rerr := c.n.addSession(s); rerr != nil {
		return fail(rerr)
	}
	c.n.store.Unexpect(s.sid) // it arrived: its title is held for it (s.t())
	c.retried(s.sid)
	c.n.log.Info("session set up", "session", s.id, "sid", s.sid, "title", s.title, "transport", s.spec.Profile,
		"es", tg.ES, "client", c.remote, "filling", !s.t().View().Complete)
	return c.setupResponse(s, s.spec, ssrc), nil
}

// setupInSession answers a SETUP with a Session header: a further track
// of an elementary-stream session (an MP2T session has one track).
func (c *rtspConn) setupInSession(req *base.Request) (*base.Response, *rtspError) {
	s, tg, err := c.sessionOf(req)
	if err != nil {
		return nil, err
	}
	if s.es == nil {
		return nil, rtspErr(base.StatusMethodNotValidInThisState, "session already set up (the title has one media)")
	}
	tv := req.Header["Transport"]
	if rtspwire.NoTransport(tv) {
		return nil, rtspErr(base.StatusBadRequest, "missing Transport header")
	}
	specs, perr := c.transportsOf(tv, true)
	if perr != nil {
		return nil, rtspErr(base.StatusUnsupportedTransport, "%v", perr)
	}
	return c.setupESTrack(req, s, tg, specs)
}

// newStream creates the MP2T stream of s.
func (c *rtspConn) newStream(s *session) (*deliver.Stream, deliver.StreamConfig, error) {
	var ids [10]byte
	rand.Read(ids[:])
	spec := s.spec
	s.ahead = newAheadSource(c.n, s.t(), s.meta)
	cfg := deliver.StreamConfig{
		Source: s.ahead, Mode: spec.Mode, Bitrate: s.meta.Bitrate, OnEnd: c.n.onStreamEnd(s),
		SSRC: binary.BigEndian.Uint32(ids[0:4]), Seq: binary.BigEndian.Uint16(ids[4:6]),
		TSBase: binary.BigEndian.Uint32(ids[6:10]),
		// At the end of the bytes of a fill that failed for the origin:
		// filled again, the play goes on (refillPlaying).
		OnFillFailed: func() bool { return c.n.refillPlaying(s) },
	}
	switch spec.Mode {
	case deliver.RTPTCP:
		cfg.Conn, cfg.Channel = c.cw, uint8(spec.Interleaved[0])
	case deliver.RTPUDP, deliver.RawUDP:
		if spec.Destination.IsValid() && spec.Destination != c.remote {
			c.n.log.Warn("ignoring SETUP destination other than the client", "destination", spec.Destination, "client", c.remote)
		}
		rtpAddr := netip.AddrPortFrom(c.remote, uint16(spec.ClientPorts[0]))
		cfg.Dest = net.UDPAddrFromAddrPort(rtpAddr)
		s.peers = []udpKey{rtpAddr}
		if spec.Mode == deliver.RTPUDP && spec.ClientPorts[1] > 0 {
			rtcpAddr := netip.AddrPortFrom(c.remote, uint16(spec.ClientPorts[1]))
			cfg.RTCPDest = net.UDPAddrFromAddrPort(rtcpAddr)
			s.peers = append(s.peers, rtcpAddr)
		}
	}
	st, err := c.n.engine.NewStream(cfg)
	return st, cfg, err
}

// setupResponse is the 200 of a SETUP that set up spec in s.
func (c *rtspConn) setupResponse(s *session, spec transportSpec, ssrc uint32) *base.Response {
	rtpPort, rtcpPort := c.n.udp.Ports()
	return &base.Response{StatusCode: base.StatusOK, Header: base.Header{
		"Session":   c.sessionValue(s),
		"Transport": base.HeaderValue{responseTransport(spec, c.remote, rtpPort, rtcpPort, ssrc)},
	}}
}

// reserve takes bps of the node's egress capacity and one session slot;
// 453 Not Enough Bandwidth when the node is full.
func (n *Node) reserve(bps int64) *rtspError {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.Capacity.MaxSessions > 0 && n.slots >= n.Capacity.MaxSessions {
		return rtspErr(base.StatusNotEnoughBandwidth, "node at its session limit (%d)", n.Capacity.MaxSessions)
	}
	if n.Capacity.EgressBps > 0 && n.reserved+bps > n.Capacity.EgressBps {
		return rtspErr(base.StatusNotEnoughBandwidth, "node egress full (%d of %d bit/s reserved)", n.reserved, n.Capacity.EgressBps)
	}
	n.reserved += bps
	n.slots++
	n.httpBursts.setSpare(n.Capacity.EgressBps - n.reserved)
	return nil
}

// unreserve gives back what reserve took.
func (n *Node) unreserve(bps int64) {
	n.mu.Lock()
	n.unreserveLocked(bps)
	n.mu.Unlock()
}

// adoptHeldMeta makes *meta, the catalog entry a session's reservation
// was made by (Lookup: the node's cached catalog), the meta of the copy t
// it holds (Acquire's, its fill asking the origin afresh): a title
// replaced at the origin with another size or bitrate since the node
// cached its catalog was served by the old entry (an HTTP body cut at the
// old size, a reader spinning at the end of a shorter copy). The
// reservation moves to the copy's bitrate: 453 Not Enough Bandwidth,
// the reservation unchanged, when the node's egress cannot take a higher
// one.
func (n *Node) adoptHeldMeta(t *store.Title, meta *store.Meta) *rtspError {
	held := t.Meta()
	if held == *meta {
		return nil
	}
	n.mu.Lock()
	d := held.Bitrate - meta.Bitrate
	if d > 0 && n.Capacity.EgressBps > 0 && n.reserved+d > n.Capacity.EgressBps {
		n.mu.Unlock()
		return rtspErr(base.StatusNotEnoughBandwidth, "node egress full (%d of %d bit/s reserved) for the title's bitrate at the origin (%d bit/s)", n.reserved, n.Capacity.EgressBps, held.Bitrate)
	}
	n.reserved += d
	n.httpBursts.setSpare(n.Capacity.EgressBps - n.reserved)
	n.mu.Unlock()
	n.log.Info("title changed at the origin since the node read its catalog: the session serves the copy it holds", "title", held.ID, "size_bytes", held.Size, "was_bytes", meta.Size, "bitrate", held.Bitrate, "was_bitrate", meta.Bitrate)
	*meta = held
	return nil
}

// unreserveLocked gives back bps bit/s and a session slot, and the egress
// to the HTTP burst pool (n.mu held).
func (n *Node) unreserveLocked(bps int64) {
	n.reserved -= bps
	n.slots--
	n.httpBursts.setSpare(n.Capacity.EgressBps - n.reserved)
}

// addSession makes s, which holds its admission session's claim, live;
// 503 when the node is closing, 401 when its token was spent meanwhile
// (the manager ended the admission session: refuseTokens). A session that streams over UDP to one of
// s's client addresses (a set-top box restarted without a TEARDOWN, set
// up again on its fixed ports) is ended: two streams into one socket
// corrupt both, and the client's new session is the one it plays.
func (n *Node) addSession(s *session) *rtspError {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return unavailable(nil, "node shutting down")
	}
	if _, used := n.used[s.sid]; used {
		e := n.spentLocked(s.sid)
		n.mu.Unlock()
		return e
	}
	n.sessions[s.id] = s
	var replaced []*session
	for _, k := range s.peers {
		if old := n.udpPeers[k]; old != nil && old != s && !slices.Contains(replaced, old) {
			replaced = append(replaced, old)
		}
		n.udpPeers[k] = s
	}
	n.mu.Unlock()
	for _, old := range replaced {
		n.log.Info("session replaced: its client set up a new session on the same UDP port", "session", old.id, "sid", old.sid, "by", s.id)
		n.endSession(old, "replaced by a new session on its client port", nil)
	}
	return nil
}

// started records the first PLAY of s and reports STARTED.
func (n *Node) started(s *session) {
	now := time.Now()
	n.mu.Lock()
	first := !s.started && !s.ended
	if first {
		s.started, s.startedAt = true, now
	}
	n.mu.Unlock()
	if !first {
		return
	}
	filled := !s.t().View().Complete
	if n.mgr != nil {
		n.mgr.report(&pb.SessionEvent{
			NodeId: n.ID, SessionId: s.sid, TitleId: s.title, Kind: pb.SessionEvent_KIND_STARTED,
			Filled: filled, AtUnixMs: now.UnixMilli(),
		})
	}
}
