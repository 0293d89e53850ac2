package acm

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/lsm"
	"vodcluster/proto/rtspwire"
)

// errUnsupportedTransport is a SETUP refused at the front door for its
// Transport (setupTransportRefusal): counted as the unsupported_transport
// outcome.
var errUnsupportedTransport = errors.New("no node serves the SETUP's Transport")

// setupTransportRefusal checks the Transport header of a SETUP at the front
// door, for a title's elementary streams (es) or its MPEG-TS, over RTSPS
// (tls) or not, as the node the SETUP would be redirected to checks it
// (rtspwire.ParseTransports, rtspwire.Servable). A SETUP no node can serve
// is refused here, with the reason, before it is admitted: redirected, it
// would take an admission (a slot of the subscriber's sessions, a node's
// reservation) until the node reported its refusal, or until the no-show
// timeout for a client that gives up at the 302. It returns 0 when a node
// can serve the SETUP, else the status (400 for no Transport header, 461
// Unsupported Transport) and its reason phrase; and whether it can be
// served only over UDP (rtspwire.NeedsUDP: only a node that serves UDP may
// take it).
func setupTransportRefusal(req *base.Request, tls, es bool) (code base.StatusCode, reason string, needsUDP bool) {
	v := req.Header["Transport"]
	if rtspwire.NoTransport(v) {
		return base.StatusBadRequest, "Bad Request (a SETUP needs a Transport header)", false
	}
	lim := rtspwire.Limits{TLS: tls, ES: es}
	ts, err := rtspwire.ParseTransports(strings.Join(v, ",")) // its lines are one list (RFC 2326 §4.2)
	if err == nil {
		ts, err = rtspwire.Servable(ts, lim)
	}
	switch {
	case err == nil:
		return 0, "", rtspwire.NeedsUDP(ts, lim)
	case errors.Is(err, rtspwire.ErrRTSPSNeedsTCP):
		return base.StatusUnsupportedTransport, "Unsupported Transport (over RTSPS only RTP/AVP/TCP or MP2T/RTP/TCP: the media go inside the TLS connection)", false
	case errors.Is(err, rtspwire.ErrESNeedsRTP):
		return base.StatusUnsupportedTransport, "Unsupported Transport (elementary streams need RTP: RTP/AVP or RTP/AVP/TCP)", false
	case errors.Is(err, rtspwire.ErrNoTransport):
		return base.StatusUnsupportedTransport, "Unsupported Transport (none of RTP/AVP, RTP/AVP/UDP, RTP/AVP/TCP, MP2T/RTP/UDP, MP2T/RTP/TCP, MP2T/UDP, RAW/RAW/UDP, MP2T/H2221/UDP; unicast, with client_port over UDP)", false
	default:
		return base.StatusUnsupportedTransport, "Unsupported Transport (" + err.Error() + ")", false
	}
}

// noUDPReason is the 461's reason phrase of a SETUP at the front door that
// offers only UDP while every node the viewer may use sends the media over
// TCP only (their tcp_only; noUDPNode).
const noUDPReason = "Unsupported Transport (the nodes that serve you send the media over TCP only: ask for RTP/AVP/TCP or MP2T/RTP/TCP, interleaved in the RTSP connection)"

// refuseSetup checks a SETUP of title at the front door on connection nc,
// for its elementary streams (es) or not, as the node it would be
// redirected to checks it: its Transport (setupTransportRefusal), then the
// track it names (setupTrackRefusal). It returns 0 when a node may serve
// it, else the status and reason phrase to answer; and whether only a node
// that serves UDP may take it (needsUDP). A SETUP that offers only UDP
// when every node the viewer may use has tcp_only (noUDPNode) is refused
// 461 (noUDPReason): players set up again over TCP.
// A refusal for the Transport is counted (the unsupported_transport
// outcome) and logged at info, collapsed with the others
// (refusedTransport): a set-top box model sending a Transport no node
// serves shows in the log and the metrics, where the front door answered
// it alone.
func (m *Manager) refuseSetup(nc net.Conn, req *base.Request, title string, es bool) (code base.StatusCode, reason string, needsUDP bool) {
	code, reason, needsUDP = setupTransportRefusal(req, isTLS(nc), es)
	ip, addr := remote(nc)
	if code == 0 && needsUDP && m.noUDPNode(ip) {
		code, reason = base.StatusUnsupportedTransport, noUDPReason
	}
	if code == 0 {
		code, reason = setupTrackRefusal(req.URL.Path, req.URL.RawQuery, es)
		return code, reason, needsUDP
	}
	countRequest(rtspProto(nc), errUnsupportedTransport)
	m.capRefusals.log(m.log, m.now(), refusedTransport, slog.LevelInfo, "SETUP refused at the front door: no node serves its Transport",
		"title", title, "client", addr, "transport", req.Header["Transport"], "status", int(code), "reason", reason)
	return code, reason, needsUDP
}

// noUDPNode reports whether the nodes the viewer at client address ip may
// use (with site_only, those of its site) all send media over TCP only
// (each registered with tcp_only: none has lsm.FeatureUDP), so that no
// SETUP that offers only UDP can be served whatever their state. False
// when one of them serves UDP, even drained, at weight 0 or dead (the
// admission says why it cannot take the viewer now, and the viewer may
// try again), or registered serving UDP with a manager before and not
// here since (a restart, a takeover; until an operator forgets it), when
// none is registered, and in the manager's first RestoreGrace
// (nodesSettledLocked: nodes may still be registering).
func (m *Manager) noUDPNode(ip string) bool {
	site := ""
	if m.SiteOnly {
		site = m.sites.siteOf(ip)
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.nodesSettledLocked(now) {
		return false
	}
	known := false
	for _, n := range m.sched.Nodes {
		if site != "" && n.Site != site {
			continue
		}
		if n.Features&lsm.FeatureUDP != 0 {
			return false
		}
		known = true
	}
	// A node not registered here since this manager's start or takeover
	// that registered serving UDP before (stored: transports.go) may come
	// back: as one registered here and dead.
	for id, t := range m.knownTransports {
		if !t.TCPOnly && (site == "" || t.Site == site) && m.sched.Node(id) == nil {
			return false
		}
	}
	return known
}

// setupTrackRefusal checks the track a SETUP at the front door names
// (path: the request URL's path, "/vod/<title>[/es][/trackID=N][/]"), as
// the node would: the title's MPEG-TS is the one track trackID=0, its
// elementary streams (es) are trackID=1 (video) and up (audio), each set
// up on its own (RFC 2326 §10.4, 459 for the aggregate URL). It returns 0
// when a node may serve the track (an elementary stream past the title's
// last is known only to the node), else the status and reason phrase. A
// track in the query (rawQuery, "token=…/trackID=N", as players append a
// control to a URL whose token is in its query; the nodes read it there)
// is left to the node.
func setupTrackRefusal(path, rawQuery string, es bool) (base.StatusCode, string) {
	if strings.Contains(rawQuery, "trackID=") {
		return 0, ""
	}
	track := -1
	if i := strings.LastIndex(path, "/trackID="); i >= 0 {
		n, err := strconv.Atoi(strings.TrimSuffix(path[i+len("/trackID="):], "/"))
		if err != nil {
			return 0, "" // vodPath let no such URL through
		}
		track = n
	}
	switch {
	case es && track < 0:
		return base.StatusAggregateOperationNotAllowed, "Aggregate Operation Not Allowed (SETUP each track of the elementary streams: trackID=1 video, trackID=2 and up audio)"
	case es && track == 0:
		return base.StatusNotFound, "Not Found (no track 0 of the elementary streams: trackID=1 video, trackID=2 and up audio)"
	case !es && track > 0:
		return base.StatusNotFound, fmt.Sprintf("Not Found (no track %d: the title is one MPEG-TS track, trackID=0)", track)
	}
	return 0, ""
}

// tcpOnly says n registered with tcp_only: it serves RTSP (has an RTSP
// address) but not over UDP (no lsm.FeatureUDP).
func tcpOnly(n *lsm.Node) bool { return n.RTSPAddr != "" && n.Features&lsm.FeatureUDP == 0 }
