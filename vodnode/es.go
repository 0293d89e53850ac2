package vodnode

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"weak"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/description"
	"github.com/bluenviron/gortsplib/v4/pkg/format"
	"github.com/pion/sdp/v3"

	"vodcluster/vodnode/deliver"
	"vodcluster/vodnode/store"
)

// Elementary-stream mode: rtsp://host/s/<token>/es/<title> offers the
// title's H.264 video as trackID=1 and each of its AAC audio tracks as
// trackID=2, 3, ... in PMT order (RFC 6184, RFC 3640; a=lang from the
// track's ISO 639 language descriptor) instead of one MP2T track, for
// players that prefer them: the client SETUPs the ones it wants.

// esSession is the part of a session specific to elementary-stream mode.
type esSession struct {
	tracks *deliver.ESTracks
	specs  []*transportSpec // per track (video, then each audio track); nil = not set up
	urls   []string         // SETUP URL per track, for RTP-Info
	dest   []*net.UDPAddr   // UDP: the client's RTP address per track
	rtcp   []*net.UDPAddr   // UDP: the client's RTCP address per track (nil: none)
}

// esProbe is the elementary streams probed of one copy of a title.
type esProbe struct {
	copy   weak.Pointer[store.Title] // the copy probed (its file), not kept alive by the cache
	tracks *deliver.ESTracks
}

// esTracksOf returns the elementary streams of title t, probed once per
// copy of the title and cached: a copy filled again (the title evicted,
// then fetched anew, e.g. a new version the operator put at the origin
// with another audio track) is a new store.Title, with a file of its own,
// and is probed again. Probes of copies gone (off the node, held by no
// session, and collected) are dropped from the cache at the next probe.
func (n *Node) esTracksOf(ctx context.Context, t *store.Title) (*deliver.ESTracks, *rtspError) {
	key := weak.Make(t)
	n.mu.Lock()
	e, ok := n.esTracks[t.ID()]
	n.mu.Unlock()
	if ok && e.copy == key {
		return e.tracks, nil
	}
	tr, err := deliver.ProbeES(ctx, t)
	if err != nil {
		if unavailable := probeUnavailable(t, err); unavailable != nil {
			return nil, unavailable
		}
		return nil, rtspErr(base.StatusUnsupportedMediaType, "no elementary streams: %v", err)
	}
	n.mu.Lock()
	for id, e := range n.esTracks {
		if e.copy.Value() == nil {
			delete(n.esTracks, id)
		}
	}
	n.esTracks[t.ID()] = esProbe{copy: key, tracks: tr}
	n.mu.Unlock()
	return tr, nil
}

// describeES probes the title (holding it, which starts its fill when it
// is not on disk) and returns its elementary-stream SDP.
func (c *rtspConn) describeES(ctx context.Context, tg target, meta store.Meta) ([]byte, *rtspError) {
	t, err := c.n.store.Acquire(ctx, tg.Title)
	if err != nil {
		return nil, storeError(err)
	}
	defer c.n.store.Release(t)
	tr, rerr := c.n.esTracksOf(ctx, t)
	if rerr != nil {
		return nil, rerr
	}
	b, err := esSDP(tg.Title, c.local, tr, meta.Duration)
	if err != nil {
		return nil, rtspErr(base.StatusInternalServerError, "%v", err)
	}
	return b, nil
}

// newESSession returns the ES part of a session of a title of tracks tr.
func newESSession(tr *deliver.ESTracks) *esSession {
	n := 1 + max(len(tr.AudioTracks()), 1)
	return &esSession{tracks: tr, specs: make([]*transportSpec, n), urls: make([]string, n),
		dest: make([]*net.UDPAddr, n), rtcp: make([]*net.UDPAddr, n)}
}

// esSDP describes the tracks with gortsplib's description, each audio
// track with its language (a=lang, RFC 4566 §6) when its PMT entry has
// one, plus the title's range, and the c= line of the node's address
// family (host: connectionInfo).
func esSDP(title string, host netip.Addr, tr *deliver.ESTracks, duration float64) ([]byte, error) {
	d := description.Session{Title: title}
	if tr.Video != nil {
		d.Medias = append(d.Medias, &description.Media{Type: description.MediaTypeVideo, Control: "trackID=1", Formats: []format.Format{tr.Video}})
	}
	langs := map[int]string{} // media index -> language
	for k, a := range tr.AudioTracks() {
		if a.Lang != "" {
			langs[len(d.Medias)] = a.Lang
		}
		d.Medias = append(d.Medias, &description.Media{Type: description.MediaTypeAudio, Control: "trackID=" + strconv.Itoa(2+k), Formats: []format.Format{a.Format}})
	}
	b, err := d.Marshal(false)
	if err != nil {
		return nil, err
	}
	var sd sdp.SessionDescription
	if err := sd.Unmarshal(b); err != nil {
		return nil, err
	}
	for i, l := range langs {
		if i < len(sd.MediaDescriptions) {
			sd.MediaDescriptions[i].Attributes = append(sd.MediaDescriptions[i].Attributes, sdp.NewAttribute("lang", l))
		}
	}
	rng := "npt=0-"
	if duration > 0 {
		rng += strconv.FormatFloat(duration, 'f', 3, 64)
	}
	sd.Attributes = append(sd.Attributes, sdp.NewAttribute("control", "*"), sdp.NewAttribute("range", rng))
	sd.ConnectionInformation = connectionInfo(host)
	sd.Origin.AddressType, sd.Origin.UnicastAddress = originAddr(host)
	return sd.Marshal()
}

// esTrack checks that track (1 video, 2 on: the audio tracks) exists and
// returns its index (track − 1).
func esTrack(tr *deliver.ESTracks, track int) (int, *rtspError) {
	audios := len(tr.AudioTracks())
	switch {
	case track == 1 && tr.Video != nil:
		return 0, nil
	case track >= 2 && track-2 < audios:
		return track - 1, nil
	case track < 0 && audios > 1:
		return 0, fixableErr(base.StatusAggregateOperationNotAllowed, "SETUP a track: trackID=1 (video) or trackID=2 to %d (audio)", 1+audios)
	case track < 0:
		return 0, fixableErr(base.StatusAggregateOperationNotAllowed, "SETUP a track: trackID=1 (video) or trackID=2 (audio)")
	}
	return 0, fixableErr(base.StatusNotFound, "no track %d", track)
}

// addESTrack records the transport of one track of an ES session: the
// first entry of specs (the SETUP's Transport list) with the transport of
// the tracks set up before it, whose channels are free (adopt).
func (c *rtspConn) addESTrack(s *session, i int, specs []transportSpec, url string) *rtspError {
	es := s.es
	if es.specs[i] != nil {
		return rtspErr(base.StatusMethodNotValidInThisState, "track already set up")
	}
	// The entries of the list the other tracks' transport allows (the
	// list holds RTP entries only: rtspwire.Servable).
	var same []transportSpec
	for _, spec := range specs {
		ok := true
		for _, other := range es.specs {
			ok = ok && (other == nil || other.Mode == spec.Mode)
		}
		if ok {
			same = append(same, spec)
		}
	}
	if len(same) == 0 {
		return rtspErr(base.StatusUnsupportedTransport, "all tracks must use the same transport")
	}
	var spec transportSpec
	if err := c.adopt(s, same, &spec); err != nil {
		return err
	}
	es.specs[i], es.urls[i] = &spec, url
	if spec.Mode == deliver.RTPUDP {
		rtpAddr := netip.AddrPortFrom(c.remote, uint16(spec.ClientPorts[0]))
		es.dest[i] = net.UDPAddrFromAddrPort(rtpAddr)
		s.peers = append(s.peers, rtpAddr)
		if spec.ClientPorts[1] > 0 {
			rtcpAddr := netip.AddrPortFrom(c.remote, uint16(spec.ClientPorts[1]))
			es.rtcp[i] = net.UDPAddrFromAddrPort(rtcpAddr)
			s.peers = append(s.peers, rtcpAddr)
		}
	}
	return nil
}

// setupESTrack answers a SETUP of a further track in an ES session.
func (c *rtspConn) setupESTrack(req *base.Request, s *session, tg target, specs []transportSpec) (*base.Response, *rtspError) {
	i, err := esTrack(s.es.tracks, tg.Track)
	if err != nil {
		return nil, err
	}
	s.ctl.Lock()
	defer s.ctl.Unlock()
	if s.player != nil {
		return nil, rtspErr(base.StatusMethodNotValidInThisState, "session already playing")
	}
	c.n.mu.Lock()
	if err := c.addESTrack(s, i, specs, req.URL.String()); err != nil {
		c.n.mu.Unlock()
		return nil, err
	}
	for _, k := range s.peers {
		c.n.udpPeers[k] = s
	}
	c.n.mu.Unlock()
	return c.setupResponse(s, *s.es.specs[i], 0), nil
}

// startES creates the ES playback of s at its first PLAY.
func (n *Node) startES(s *session) *rtspError {
	ahead := newAheadSource(n, s.t(), s.meta)
	cfg := n.esConfig(s, ahead)
	st, err := n.engine.NewESStream(cfg)
	if err != nil {
		return rtspErr(base.StatusInternalServerError, "%v", err)
	}
	n.mu.Lock()
	if s.ended { // a TEARDOWN (or timeout) won the race: nothing would stop this stream
		n.mu.Unlock()
		st.Close()
		return rtspErr(base.StatusSessionNotFound, "session %s ended", s.id)
	}
	s.player, s.ahead = esPlayer{st}, ahead
	s.meter.Store(st.BytesSent)
	n.mu.Unlock()
	return nil
}

// abortES sends the RTCP BYE with reason on each track of s, an ES
// session set up but never played (it has no stream yet), as an MP2T
// session's client gets it from its stream created at SETUP. The channel
// returned is Abort's (nil when no BYE could be made).
func (n *Node) abortES(s *session, reason string) <-chan struct{} {
	st, err := n.engine.NewESStream(n.esConfig(s, s.t()))
	if err != nil {
		n.log.Debug("no BYE for an unplayed ES session", "session", s.id, "err", err)
		return nil
	}
	return st.Abort(reason)
}

// esConfig is the playback of s's tracks as set up from src (s's title,
// or its aheadSource), with new random SSRCs, first sequence numbers and
// RTP timestamps (RFC 3550 §5.1).
func (n *Node) esConfig(s *session, src deliver.Source) deliver.ESConfig {
	es := s.es
	ids := make([]byte, 10*len(es.specs))
	rand.Read(ids)
	cfg := deliver.ESConfig{Source: src, Tracks: es.tracks, Bitrate: s.meta.Bitrate, Channel: [2]int{-1, -1},
		OnEnd: n.onStreamEnd(s),
		// At the end of the bytes of a fill that failed for the origin,
		// or a seek past them: filled again, the play goes on
		// (refillPlaying).
		OnFillFailed: func() bool { return n.refillPlaying(s) }}
	if len(es.specs) > 2 {
		cfg.More = make([]deliver.ESTrackConfig, len(es.specs)-2)
	}
	for i, spec := range es.specs {
		t := deliver.ESTrackConfig{Channel: -1, SSRC: binary.BigEndian.Uint32(ids[10*i:]),
			Seq: binary.BigEndian.Uint16(ids[10*i+4:]), TSBase: binary.BigEndian.Uint32(ids[10*i+6:])}
		if spec != nil {
			cfg.Mode = spec.Mode
			switch spec.Mode {
			case deliver.RTPTCP:
				if s.conn != nil {
					cfg.Conn, t.Channel = s.conn.cw, spec.Interleaved[0]
				}
			case deliver.RTPUDP:
				t.Dest, t.RTCP = es.dest[i], es.rtcp[i]
			}
		}
		if i >= 2 {
			cfg.More[i-2] = t
			continue
		}
		cfg.SSRC[i], cfg.Seq[i], cfg.TSBase[i] = t.SSRC, t.Seq, t.TSBase
		cfg.Channel[i], cfg.Dest[i], cfg.RTCP[i] = t.Channel, t.Dest, t.RTCP
	}
	return cfg
}

// trackURLs returns the SETUP URL of each track of s, in PlayInfo order.
func (s *session) trackURLs() []string {
	if s.es != nil {
		return s.es.urls
	}
	return []string{s.controlURL}
}
