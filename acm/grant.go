package acm

import (
	"vodcluster/acm/store"
	"vodcluster/lsm"
)

// grant is an admitted request: the session, its node's addresses and the
// signed token.
type grant struct {
	Session    store.Session
	RTSPAddr   string
	RTSPSAddr  string // the node's RTSPS address, "" when it has none
	HTTPAddr   string
	HTTPScheme string // "http", or "https" for a node with HTTPS
	Token      string
}

// grantLocked is the grant of session s on node n, with n's addresses as
// it registered them (mu held); the token is signed later.
func (m *Manager) grantLocked(s store.Session, n *lsm.Node) *grant {
	g := &grant{Session: s, RTSPAddr: n.RTSPAddr, HTTPAddr: n.HTTPAddr, HTTPScheme: "http"}
	if ns := m.nodes[n.ID]; ns != nil {
		if ns.httpTLS {
			g.HTTPScheme = "https"
		}
		g.RTSPSAddr = ns.rtspsAddr
	}
	return g
}

// rtspURL is the scheme and address of g's node for an RTSP viewer:
// rtsps:// when the viewer came over RTSPS (overTLS) and the node has an
// RTSPS listener, rtsp:// otherwise.
func (g *grant) rtspURL(overTLS bool) string {
	if overTLS && g.RTSPSAddr != "" {
		return "rtsps://" + g.RTSPSAddr
	}
	return "rtsp://" + g.RTSPAddr
}
