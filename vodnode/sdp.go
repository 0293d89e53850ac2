package vodnode

import (
	"net/netip"
	"strconv"

	"github.com/pion/sdp/v3"
)

// connectionInfo is the SDP c= line of a description served from host
// (the node's address the client connected to): "IN IP6 ::" over IPv6,
// else "IN IP4 0.0.0.0" (RFC 2326 appendix C.1.7: the address is the
// client's to choose, the node streams to the one it connects from).
// GStreamer's rtspsrc opens its UDP sockets for the family this line
// names: with IP4 over IPv6 it bound IPv4 sockets and failed to send its
// RTCP to the node ("Invalid address family").
func connectionInfo(host netip.Addr) *sdp.ConnectionInformation {
	if host.IsValid() && host.Is6() {
		return &sdp.ConnectionInformation{NetworkType: "IN", AddressType: "IP6", Address: &sdp.Address{Address: "::"}}
	}
	return &sdp.ConnectionInformation{NetworkType: "IN", AddressType: "IP4", Address: &sdp.Address{Address: "0.0.0.0"}}
}

// originAddr is the address type and address of an SDP o= line served
// from host: host itself, IP4 127.0.0.1 when it is not known.
func originAddr(host netip.Addr) (addrType, unicast string) {
	addrType, unicast = "IP4", "127.0.0.1"
	if host.IsValid() {
		unicast = host.String()
		if host.Is6() {
			addrType = "IP6"
		}
	}
	return addrType, unicast
}

// describeSDP returns the session description of a title (RFC 4566; RTSP
// use in RFC 2326 appendix C): one MPEG-TS media, RTP payload type 33
// (MP2T/90000, RFC 3551), control URL "trackID=0" relative to the
// Content-Base, and the title's range in npt seconds.
func describeSDP(title string, host netip.Addr, duration float64) ([]byte, error) {
	addrType, unicast := originAddr(host)
	rng := "npt=0-"
	if duration > 0 {
		rng += strconv.FormatFloat(duration, 'f', 3, 64)
	}
	d := &sdp.SessionDescription{
		Version: 0,
		Origin: sdp.Origin{
			Username: "-", SessionID: 1, SessionVersion: 1,
			NetworkType: "IN", AddressType: addrType, UnicastAddress: unicast,
		},
		SessionName:           sdp.SessionName(title),
		ConnectionInformation: connectionInfo(host),
		TimeDescriptions:      []sdp.TimeDescription{{Timing: sdp.Timing{}}},
		Attributes: []sdp.Attribute{
			sdp.NewAttribute("tool", "vodcluster"),
			sdp.NewAttribute("control", "*"),
			sdp.NewAttribute("range", rng),
		},
		MediaDescriptions: []*sdp.MediaDescription{{
			MediaName: sdp.MediaName{Media: "video", Port: sdp.RangedPort{Value: 0}, Protos: []string{"RTP", "AVP"}, Formats: []string{"33"}},
			Attributes: []sdp.Attribute{
				sdp.NewAttribute("rtpmap", "33 MP2T/90000"),
				sdp.NewAttribute("control", "trackID=0"),
			},
		}},
	}
	return d.Marshal()
}
