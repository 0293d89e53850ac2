package vodnode

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"vodcluster/vodnode/deliver"
)

// transportSpec is one entry of a Transport header (RFC 2326 §12.39) that
// the node can serve.
type transportSpec struct {
	Profile     string       // as the client spelled it, upper-cased: RTP/AVP, MP2T/UDP, ...
	Mode        deliver.Mode // how the packets travel
	ClientPorts [2]int       // UDP: client's media and RTCP ports (RTCP 0 when none)
	Interleaved [2]int       // TCP: channels; -1 when the client gave none
	Destination netip.Addr   // destination= when given (invalid otherwise)
}

// profiles maps the transport profiles the node serves to delivery modes:
// RTP/AVP of RFC 2326 and the IPTV set-top box profiles.
var profiles = map[string]deliver.Mode{
	"RTP/AVP":        deliver.RTPUDP,
	"RTP/AVP/UDP":    deliver.RTPUDP,
	"MP2T/RTP/UDP":   deliver.RTPUDP,
	"RTP/AVP/TCP":    deliver.RTPTCP,
	"MP2T/RTP/TCP":   deliver.RTPTCP,
	"MP2T/UDP":       deliver.RawUDP,
	"RAW/RAW/UDP":    deliver.RawUDP,
	"MP2T/H2221/UDP": deliver.RawUDP,
}

// errNoTransport means no entry of the header can be served (461).
var errNoTransport = errors.New("no supported transport (RTP/AVP, RTP/AVP/TCP, MP2T/RTP/UDP, MP2T/RTP/TCP, MP2T/UDP, RAW/RAW/UDP; unicast)")

// transportsOf is parseTransports for a SETUP on c: over RTSPS only the
// interleaved entries (RTP/AVP/TCP, MP2T/RTP/TCP), so that the media go
// inside the TLS connection, not in clear over UDP; an error naming that
// (461) when the header has no such entry.
func (c *rtspConn) transportsOf(v string) ([]transportSpec, error) {
	specs, err := parseTransports(v)
	if err != nil || !c.overTLS() {
		return specs, err
	}
	tcp := specs[:0]
	for _, s := range specs {
		if s.Mode == deliver.RTPTCP {
			tcp = append(tcp, s)
		}
	}
	if len(tcp) == 0 {
		return nil, errRTSPSNeedsTCP
	}
	return tcp, nil
}

// errRTSPSNeedsTCP refuses a SETUP over RTSPS that asks for UDP only.
var errRTSPSNeedsTCP = errors.New("over RTSPS the media go interleaved in the TLS connection (RTP/AVP/TCP or MP2T/RTP/TCP): UDP would carry them in clear")

// parseTransports returns the entries of a Transport header value the node
// can serve, in the client's order of preference. Entries with an unknown
// profile, multicast, a record mode or missing client ports are skipped;
// malformed parameters of an entry skip that entry. errNoTransport when
// nothing is left.
func parseTransports(v string) ([]transportSpec, error) {
	if len(v) > 4096 {
		return nil, errors.New("transport header too long")
	}
	var out []transportSpec
	for _, entry := range strings.Split(v, ",") {
		if s, ok := parseTransport(entry); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errNoTransport
	}
	return out, nil
}

func parseTransport(entry string) (transportSpec, bool) {
	parts := strings.Split(strings.TrimSpace(entry), ";")
	s := transportSpec{Profile: strings.ToUpper(strings.TrimSpace(parts[0])), Interleaved: [2]int{-1, -1}}
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
	if mode != deliver.RTPTCP && s.ClientPorts[0] == 0 {
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

// responseTransport formats the Transport header of a SETUP response for
// spec as granted.
func responseTransport(s transportSpec, dest netip.Addr, serverRTP, serverRTCP int, ssrc uint32) string {
	var b strings.Builder
	b.WriteString(s.Profile)
	b.WriteString(";unicast")
	switch s.Mode {
	case deliver.RTPTCP:
		fmt.Fprintf(&b, ";interleaved=%d-%d", s.Interleaved[0], s.Interleaved[1])
	case deliver.RTPUDP:
		ports := fmt.Sprintf("%d-%d", s.ClientPorts[0], s.ClientPorts[1])
		if s.ClientPorts[1] == 0 {
			// client_port=65535 alone: no port above it for RTCP, none
			// is sent (the answer said client_port=65535-0)
			ports = strconv.Itoa(s.ClientPorts[0])
		}
		fmt.Fprintf(&b, ";destination=%s;client_port=%s;server_port=%d-%d", dest, ports, serverRTP, serverRTCP)
	case deliver.RawUDP:
		fmt.Fprintf(&b, ";destination=%s;client_port=%d;server_port=%d", dest, s.ClientPorts[0], serverRTP)
	}
	if s.Mode != deliver.RawUDP && ssrc != 0 {
		fmt.Fprintf(&b, ";ssrc=%08X", ssrc)
	}
	b.WriteString(";mode=play")
	return b.String()
}
