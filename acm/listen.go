package acm

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"vodcluster/acm/store"
)

// listen binds the front doors (RTSP, RTSPS when configured, HTTP or
// HTTPS), their connections counted per client address against
// MaxConnsPerAddr (connlimit.go), and the gRPC port. Errors name the listener; what was bound
// before the error stays bound for teardown to close.
func (m *Manager) listen() (err error) {
	m.conns = newConnLimiter(m.MaxConnsPerAddr, m.log)
	conns := m.conns
	if m.rtspLn, err = net.Listen("tcp", m.RTSPListen); err != nil {
		return fmt.Errorf("acm: rtsp: %w", err)
	}
	m.rtspLn = conns.wrap(m.rtspLn, store.ProtoRTSP, refuseRTSP)
	if (m.RTSPSListen == "") != (m.RTSPTLS == nil) {
		return errors.New("acm: RTSPS needs both a listen address and a TLS configuration")
	}
	if m.RTSPTLS != nil {
		ln, err := net.Listen("tcp", m.RTSPSListen)
		if err != nil {
			return fmt.Errorf("acm: rtsps: %w", err)
		}
		m.rtspsLn = tls.NewListener(conns.wrap(ln, store.ProtoRTSPS, refuseClose), m.RTSPTLS)
	}
	if m.httpLn, err = net.Listen("tcp", m.HTTPListen); err != nil {
		return fmt.Errorf("acm: http: %w", err)
	}
	httpRefuse := refuseHTTP
	if m.HTTPTLS != nil {
		httpRefuse = refuseClose // its bytes would have to be TLS
	}
	m.httpLn = conns.wrap(m.httpLn, store.ProtoHTTP, httpRefuse)
	if m.HTTPTLS != nil {
		m.httpLn = tls.NewListener(m.httpLn, m.HTTPTLS)
	}
	if m.grpcLn, err = net.Listen("tcp", m.GRPCListen); err != nil {
		return fmt.Errorf("acm: grpc: %w", err)
	}
	return nil
}

// RTSPAddr returns the bound RTSP front door address (host:port), "" before Start.
func (m *Manager) RTSPAddr() string { return addrOf(m.rtspLn) }

// RTSPSAddr returns the bound RTSPS front door address (host:port), ""
// before Start or without RTSPS.
func (m *Manager) RTSPSAddr() string { return addrOf(m.rtspsLn) }

// HTTPAddr returns the bound HTTP front door address (host:port), "" before Start.
func (m *Manager) HTTPAddr() string { return addrOf(m.httpLn) }

// GRPCAddr returns the bound gRPC address (host:port), "" before Start.
func (m *Manager) GRPCAddr() string { return addrOf(m.grpcLn) }

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}
