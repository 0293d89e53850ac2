package grpctls

import (
	"net"
	"net/netip"
)

// Loopback reports whether addr (HOST:PORT, as a listen address is
// written or as a bound listener reports it) binds loopback only: a
// loopback IP (127.0.0.0/8, ::1, an IPv4-mapped 127.x, with or without an
// IPv6 zone) or the name localhost. ":PORT", 0.0.0.0, :: and every other
// host bind or may bind an interface others reach: false, as for an addr
// that does not parse. A gRPC service left without a credential warns,
// or refuses to start, unless its address is loopback.
func Loopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}
