package acm

import (
	"errors"
	"log/slog"
	"net"
	"strings"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/rtspwire"
)

// setupTransportRefusal checks the Transport header of a SETUP at the front
// door, for a title's elementary streams (es) or its MPEG-TS, over RTSPS
// (tls) or not, as the node the SETUP would be redirected to checks it
// (rtspwire.ParseTransports, rtspwire.Servable). A SETUP no node can serve
// is refused here, with the reason, before it is admitted: redirected, it
// would take an admission (a slot of the subscriber's sessions, a node's
// reservation) until the node reported its refusal, or until the no-show
// timeout for a client that gives up at the 302. It returns 0 when a node
// can serve the SETUP, else the status (400 for no Transport header, 461
// Unsupported Transport) and its reason phrase.
// errUnsupportedTransport is a SETUP refused at the front door for its
// Transport (setupTransportRefusal): counted as the unsupported_transport
// outcome.
var errUnsupportedTransport = errors.New("no node serves the SETUP's Transport")

func setupTransportRefusal(req *base.Request, tls, es bool) (base.StatusCode, string) {
	v := req.Header["Transport"]
	if len(v) == 0 || strings.TrimSpace(v[0]) == "" {
		return base.StatusBadRequest, "Bad Request (a SETUP needs a Transport header)"
	}
	ts, err := rtspwire.ParseTransports(v[0])
	if err == nil {
		_, err = rtspwire.Servable(ts, tls, es)
	}
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, rtspwire.ErrRTSPSNeedsTCP):
		return base.StatusUnsupportedTransport, "Unsupported Transport (over RTSPS only RTP/AVP/TCP or MP2T/RTP/TCP: the media go inside the TLS connection)"
	case errors.Is(err, rtspwire.ErrESNeedsRTP):
		return base.StatusUnsupportedTransport, "Unsupported Transport (elementary streams need RTP: RTP/AVP or RTP/AVP/TCP)"
	case errors.Is(err, rtspwire.ErrNoTransport):
		return base.StatusUnsupportedTransport, "Unsupported Transport (none of RTP/AVP, RTP/AVP/UDP, RTP/AVP/TCP, MP2T/RTP/UDP, MP2T/RTP/TCP, MP2T/UDP, RAW/RAW/UDP, MP2T/H2221/UDP; unicast, with client_port over UDP)"
	default:
		return base.StatusUnsupportedTransport, "Unsupported Transport (" + err.Error() + ")"
	}
}

// refuseSetupTransport is setupTransportRefusal for a SETUP of title on
// connection nc, for its elementary streams (es) or not: a refusal is
// counted (the unsupported_transport outcome) and logged at info, collapsed
// with the others (refusedTransport): a set-top box model sending a
// Transport no node serves shows in the log and the metrics, where the
// front door answered it alone.
func (m *Manager) refuseSetupTransport(nc net.Conn, req *base.Request, title string, es bool) (base.StatusCode, string) {
	code, reason := setupTransportRefusal(req, isTLS(nc), es)
	if code == 0 {
		return 0, ""
	}
	countRequest(rtspProto(nc), errUnsupportedTransport)
	_, addr := remote(nc)
	m.capRefusals.log(m.log, m.now(), refusedTransport, slog.LevelInfo, "SETUP refused at the front door: no node serves its Transport",
		"title", title, "client", addr, "transport", req.Header["Transport"], "status", int(code), "reason", reason)
	return code, reason
}
