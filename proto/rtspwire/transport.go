package rtspwire

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// Delivery is how the packets of a Transport entry travel.
type Delivery int

// Deliveries.
const (
	RTPUDP Delivery = iota + 1 // RTP over UDP (RTP/AVP, MP2T/RTP/UDP)
	RTPTCP                     // RTP interleaved in the RTSP connection (RTP/AVP/TCP, MP2T/RTP/TCP; RFC 2326 §10.12)
	RawUDP                     // MPEG-TS packets in UDP datagrams, no RTP (MP2T/UDP, RAW/RAW/UDP)
)

// Transport is one entry of a Transport header (RFC 2326 §12.39) that a
// node can serve.
type Transport struct {
	Profile     string     // as the client spelled it, upper-cased: RTP/AVP, MP2T/UDP, ...
	Mode        Delivery   // how the packets travel
	ClientPorts [2]int     // UDP: client's media and RTCP ports (RTCP 0 when none)
	Interleaved [2]int     // TCP: channels; -1 when the client gave none
	Destination netip.Addr // destination= when given (invalid otherwise)
}

// profiles maps the transport profiles the nodes serve to deliveries: RTP/AVP
// of RFC 2326 and the IPTV set-top box profiles.
var profiles = map[string]Delivery{
	"RTP/AVP":        RTPUDP,
	"RTP/AVP/UDP":    RTPUDP,
	"MP2T/RTP/UDP":   RTPUDP,
	"RTP/AVP/TCP":    RTPTCP,
	"MP2T/RTP/TCP":   RTPTCP,
	"MP2T/UDP":       RawUDP,
	"RAW/RAW/UDP":    RawUDP,
	"MP2T/H2221/UDP": RawUDP,
}

// Errors of ParseTransports and Servable; each answers a SETUP with 461
// Unsupported Transport.
var (
	// ErrNoTransport means no entry of the header can be served.
	ErrNoTransport = errors.New("no supported transport (RTP/AVP, RTP/AVP/UDP, RTP/AVP/TCP, MP2T/RTP/UDP, MP2T/RTP/TCP, MP2T/UDP, RAW/RAW/UDP, MP2T/H2221/UDP; unicast, with client_port over UDP)")
	// ErrRTSPSNeedsTCP refuses a SETUP over RTSPS that asks for UDP only.
	ErrRTSPSNeedsTCP = errors.New("over RTSPS the media go interleaved in the TLS connection (RTP/AVP/TCP or MP2T/RTP/TCP): UDP would carry them in clear")
	// ErrESNeedsRTP refuses a SETUP of elementary streams (a title's
	// /es URL) that asks for MPEG-TS in UDP only: each track is an RTP
	// stream.
	ErrESNeedsRTP = errors.New("elementary streams need RTP (RTP/AVP or RTP/AVP/TCP)")
	// ErrNoUDP refuses a SETUP that asks for UDP only on a node that
	// serves the media over TCP only (tcp_only): the player may set up
	// again over TCP (ffmpeg, GStreamer and VLC do after a 461).
	ErrNoUDP = errors.New("this node sends the media over TCP only (RTP/AVP/TCP or MP2T/RTP/TCP, interleaved in the RTSP connection): ask for TCP")
)

// ParseTransports returns the entries of a Transport header value a node
// can serve, in the client's order of preference. Entries with an unknown
// profile, multicast, a record mode or missing client ports are skipped;
// malformed parameters of an entry skip that entry. ErrNoTransport when
// nothing is left; an error for a value over 4096 bytes.
func ParseTransports(v string) ([]Transport, error) {
	if len(v) > 4096 {
		return nil, errors.New("transport header too long")
	}
	var out []Transport
	for _, entry := range strings.Split(v, ",") {
		if s, ok := parseTransport(entry); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoTransport
	}
	return out, nil
}

// Limits are what narrows the transports a SETUP may be served with.
type Limits struct {
	// TLS: the SETUP came over RTSPS; only interleaved entries, so that
	// the media go inside the TLS connection, not in clear over UDP.
	TLS bool
	// NoUDP: the node serves media over TCP only (its tcp_only); only
	// interleaved entries.
	NoUDP bool
	// ES: a title's elementary streams (its /es URL); only RTP entries
	// (MPEG-TS in UDP carries no elementary stream).
	ES bool
}

// Servable keeps, of ts (from ParseTransports), the entries a SETUP may be
// served with under lim, in the client's order. ErrRTSPSNeedsTCP,
// ErrNoUDP or ErrESNeedsRTP (the first limit that applies, in that order)
// when none is left. ts is filtered in place.
func Servable(ts []Transport, lim Limits) ([]Transport, error) {
	out := ts[:0]
	for _, t := range ts {
		if lim.allows(t) {
			out = append(out, t)
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case lim.TLS:
		return nil, ErrRTSPSNeedsTCP
	case lim.NoUDP:
		return nil, ErrNoUDP
	default:
		return nil, ErrESNeedsRTP
	}
}

// NeedsUDP reports whether a SETUP with ts (from ParseTransports) can be
// served only over UDP under lim (lim.NoUDP ignored): some entry is
// servable, none of them interleaved. Such a SETUP must go to a node that
// serves UDP.
func NeedsUDP(ts []Transport, lim Limits) bool {
	lim.NoUDP = false
	servable := false
	for _, t := range ts {
		if !lim.allows(t) {
			continue
		}
		if t.Mode == RTPTCP {
			return false
		}
		servable = true
	}
	return servable
}

// allows reports whether entry t may be served under lim: interleaved
// only over RTSPS or without UDP, not MPEG-TS in UDP for elementary
// streams.
func (lim Limits) allows(t Transport) bool {
	if (lim.TLS || lim.NoUDP) && t.Mode != RTPTCP {
		return false
	}
	return !lim.ES || t.Mode != RawUDP
}

func parseTransport(entry string) (Transport, bool) {
	parts := strings.Split(strings.TrimSpace(entry), ";")
	s := Transport{Profile: strings.ToUpper(strings.TrimSpace(parts[0])), Interleaved: [2]int{-1, -1}}
	mode, ok := profiles[s.Profile]
	if !ok {
		return s, false
	}
	s.Mode = mode
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
		val = strings.Trim(strings.TrimSpace(val), `"`)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "multicast":
			return s, false
		case "mode":
			if m := strings.ToLower(val); m != "play" && m != "" {
				return s, false
			}
		case "client_port":
			a, b, ok := parsePortRange(val, 1)
			if !ok {
				return s, false
			}
			s.ClientPorts = [2]int{a, b}
		case "interleaved":
			a, b, ok := parsePortRange(val, 0)
			if !ok || a > 254 || b > 255 { // RTP on a, RTCP on a+1: both must fit in the $ frame's byte
				return s, false
			}
			s.Interleaved = [2]int{a, b}
		case "destination":
			if ip, err := netip.ParseAddr(val); err == nil {
				s.Destination = ip.Unmap()
			}
		}
	}
	if mode != RTPTCP && s.ClientPorts[0] == 0 {
		return s, false
	}
	return s, true
}

// parsePortRange parses "a" or "a-b" with min <= a <= b <= 65535 (a
// descending range is no pair: RTP on a, RTCP on a port below it). A single
// value means a and a+1 for RTP pairs; callers that need one port ignore b.
func parsePortRange(v string, min int) (int, int, bool) {
	as, bs, two := strings.Cut(v, "-")
	a, err := strconv.Atoi(as)
	if err != nil || a < min || a > 65535 {
		return 0, 0, false
	}
	if !two {
		if a == 65535 {
			return a, 0, true
		}
		return a, a + 1, true
	}
	b, err := strconv.Atoi(bs)
	if err != nil || b < a || b > 65535 {
		return 0, 0, false
	}
	return a, b, true
}

// NoTransport reports whether the Transport header lines v of a SETUP
// name no transport at all: none, or only empty or blank ones (400 Bad
// Request, RFC 2326 §12.39: the header is required; not 461, there being
// nothing to be unsupported).
func NoTransport(v []string) bool {
	for _, s := range v {
		if strings.Trim(s, " \t,") != "" {
			return false
		}
	}
	return true
}
