package acm

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"vodcluster/acm/store"
	"vodcluster/proto/connlimit"
)

// listen binds the front doors (RTSP, RTSPS when configured, HTTP or
// HTTPS), their connections counted per client address against
// MaxConnsPerAddr (proto/connlimit), and the gRPC port. Errors name the listener; what was bound
// before the error stays bound for teardown to close.
func (m *Manager) listen() (err error) {
	m.conns = connlimit.New(connlimit.Config{Max: m.MaxConnsPerAddr, Setting: "max_conns_per_addr", Log: m.log,
		Refused: func(listener string) { connsRefused.WithLabelValues(listener).Inc() }})
	conns := m.conns
	if m.rtspLn, err = net.Listen("tcp", m.RTSPListen); err != nil {
		return fmt.Errorf("acm: rtsp: %w", err)
	}
	m.rtspLn = conns.Wrap(m.rtspLn, store.ProtoRTSP, connlimit.RTSP)
	if (m.RTSPSListen == "") != (m.RTSPTLS == nil) {
		return errors.New("acm: RTSPS needs both a listen address and a TLS configuration")
	}
	if m.RTSPTLS != nil {
		ln, err := net.Listen("tcp", m.RTSPSListen)
		if err != nil {
			return fmt.Errorf("acm: rtsps: %w", err)
		}
		m.rtspsLn = tls.NewListener(conns.Wrap(ln, store.ProtoRTSPS, connlimit.Close), m.RTSPTLS)
	}
	if m.httpLn, err = net.Listen("tcp", m.HTTPListen); err != nil {
		return fmt.Errorf("acm: http: %w", err)
	}
	httpRefuse := connlimit.HTTP
	if m.HTTPTLS != nil {
		httpRefuse = connlimit.Close // its bytes would have to be TLS
	}
	m.httpLn = conns.Wrap(m.httpLn, store.ProtoHTTP, httpRefuse)
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
