package acm

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

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

// An RTSPS viewer is sent only to a node with RTSPS (its player cannot
// follow a redirect to plain RTSP: ffmpeg speaks TLS to the plain port,
// gortsplib refuses to downgrade), even when the plain node is idler; with
// the RTSPS node full it is refused (453), while a plain RTSP viewer still
// gets the plain node.
func TestRTSPSViewersGoToRTSPSNodes(t *testing.T) {
	_, cfg, cli := grpctlstest.TLS(t, "127.0.0.1")
	cli.ServerName = "127.0.0.1"
	e := newManager(t, "", func(m *Manager) { m.RTSPTLS, m.RTSPSListen = cfg, "127.0.0.1:0" })
	e.startNode("plain", nodeOpts{rtsp: "127.0.0.1:7001", egress: 100 * titleBps})
	e.startNode("tls", nodeOpts{rtsp: "127.0.0.1:7002", rtsps: "127.0.0.1:7003", egress: 3 * titleBps})
	describe := func(title string) (int, string) {
		t.Helper()
		nc, err := tls.Dial("tcp", e.m.RTSPSAddr(), cli)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(nc, "DESCRIBE rtsps://%s/vod/%s RTSP/1.0\r\nCSeq: 1\r\nAuthorization: %s\r\n\r\n",
			e.m.RTSPSAddr(), title, basicHeader("demo", "demo")["Authorization"][0])
		tp := textproto.NewReader(bufio.NewReader(nc))
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		h, _ := tp.ReadMIMEHeader()
		var code int
		fmt.Sscanf(line, "RTSP/1.0 %d", &code)
		return code, h.Get("Location")
	}
	for _, title := range []string{"t1", "t2", "t3"} {
		if code, loc := describe(title); code != 302 || !strings.HasPrefix(loc, "rtsps://127.0.0.1:7003/") {
			t.Fatalf("RTSPS viewer of %s: %d %q, want the RTSPS node", title, code, loc)
		}
	}
	// The RTSPS node is full (3 sessions): the next RTSPS viewer is
	// refused, not sent to the idle plain node.
	if code, loc := describe("t1"); code != 453 {
		t.Fatalf("RTSPS viewer with the RTSPS node full: %d %q, want 453", code, loc)
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7001") {
		t.Fatalf("plain RTSP viewer: %d %v, want the plain node", res.StatusCode, res.Header["Location"])
	}
}
