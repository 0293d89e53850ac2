package vodnode

import (
	"net/netip"
	"strconv"

	"github.com/pion/sdp/v3"
)

// describeSDP returns the session description of a title (RFC 4566; RTSP
// use in RFC 2326 appendix C): one MPEG-TS media, RTP payload type 33
// (MP2T/90000, RFC 3551), control URL "trackID=0" relative to the
// Content-Base, and the title's range in npt seconds.
func describeSDP(title string, host netip.Addr, duration float64) ([]byte, error) {
	addrType, unicast := "IP4", "127.0.0.1"
	if host.IsValid() {
		unicast = host.String()
		if host.Is6() {
			addrType = "IP6"
		}
	}
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
		ConnectionInformation: &sdp.ConnectionInformation{NetworkType: "IN", AddressType: "IP4", Address: &sdp.Address{Address: "0.0.0.0"}},
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
