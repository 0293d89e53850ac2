// Package connlimittest helps test a server's per-address connection
// limit (proto/connlimit) over loopback: each connection comes from a
// loopback address the test picks (127.0.0.0/8 is every host's).
package connlimittest

import (
	"net"
	"testing"
	"time"
)

// DialFrom opens a TCP connection to addr from the loopback address from
// ("127.0.0.2"), within 5 s, closed when the test ends; the test fails
// if it cannot.
func DialFrom(t testing.TB, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}
