package acm

import (
	"io"
	"net"
	"testing"
	"time"

	"vodcluster/proto/grpctls/grpctlstest"
)

// A client that opens the RTSPS front door and never completes its TLS
// handshake (sends nothing, or half a ClientHello) is closed after
// tlsHandshakeTimeout, not kept for the idle timeout.
func TestRTSPSHandshakeTimeout(t *testing.T) {
	was := tlsHandshakeTimeout
	t.Cleanup(func() { tlsHandshakeTimeout = was }) // after the server's own cleanup
	tlsHandshakeTimeout = 200 * time.Millisecond
	_, cfg, _ := grpctlstest.TLS(t, "127.0.0.1")
	e := newManager(t, "", func(m *Manager) { m.RTSPTLS, m.RTSPSListen = cfg, "127.0.0.1:0" })
	for name, send := range map[string][]byte{
		"nothing":             nil,
		"half a client hello": {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00},
	} {
		nc, err := net.Dial("tcp", e.m.RTSPSAddr())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(send)
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		_, err = io.ReadAll(nc)
		nc.Close()
		if err != nil {
			t.Errorf("%s: connection still open after %v (%v), want it closed after the handshake timeout", name, time.Since(start), err)
		}
	}
}
