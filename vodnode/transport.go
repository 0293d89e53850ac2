package vodnode

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"vodcluster/proto/rtspwire"
	"vodcluster/vodnode/deliver"
)

// transportSpec is one entry of a Transport header the node can serve
// (rtspwire.ParseTransports).
type transportSpec = rtspwire.Transport

// transportsOf parses the Transport header of a SETUP on c of elementary
// streams (es) or not, its lines v taken as one list (RFC 2326 §4.2): the
// entries it may be served with (rtspwire.Servable: only interleaved ones
// over RTSPS or on a node with TCPOnly), in the client's order; an error
// to answer 461 with when there is none (one for UDP on a TCPOnly node
// is counted: vodnode_setups_udp_refused_total). The front door
// checks the same before it admits.
func (c *rtspConn) transportsOf(v []string, es bool) ([]transportSpec, error) {
	specs, err := rtspwire.ParseTransports(strings.Join(v, ","))
	if err != nil {
		return nil, err
	}
	specs, err = rtspwire.Servable(specs, rtspwire.Limits{TLS: c.overTLS(), NoUDP: c.n.TCPOnly, ES: es})
	if errors.Is(err, rtspwire.ErrNoUDP) {
		c.n.udpRefused.Add(1)
	}
	return specs, err
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
