package deliver

import (
	"crypto/tls"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"vodcluster/proto/grpctls/grpctlstest"
)

// acceptFrom dials l from the path's namespace (a receive buffer of 4096
// bytes asked) and returns the connection l accepted, its send buffer
// 4096 bytes, and the viewer's end (which the caller need not read).
func (p *narrowPath) acceptFrom(t *testing.T, l net.Listener) (srv, cli net.Conn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	cli = p.dialFrom(t, l.Addr().String(), 4096)
	srv = <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { srv.Close() })
	srv.(*net.TCPConn).SetWriteBuffer(4096)
	return srv, cli
}

// tlsFrom is acceptFrom over TLS: the server's end of a connection whose
// client, in the path's namespace, completed the handshake (grpctlstest's
// certificate for 127.0.0.1); the viewer's end need not be read.
func (p *narrowPath) tlsFrom(t *testing.T, l net.Listener) *tls.Conn {
	t.Helper()
	s, c := p.acceptFrom(t, l)
	_, srvCfg, cliCfg := grpctlstest.TLS(t, "127.0.0.1")
	cliCfg.ServerName = "127.0.0.1"
	srv, cli := tls.Server(s, srvCfg), tls.Client(c, cliCfg)
	errc := make(chan error, 1)
	go func() { errc <- srv.Handshake() }()
	if err := cli.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return srv
}

// probeBackoff returns how many times the kernel has doubled the gap
// between rc's probes (tcpi_backoff); -1 without TCP_INFO.
func probeBackoff(rc syscall.RawConn) int {
	ti, ok := tcpInfo(rc)
	if !ok {
		return -1
	}
	return int(ti.Backoff)
}

// A viewer that stopped reading, its host alive, and whose host then
// goes (its link down) is seen gone within about two of its writer's
// 10 s timeouts, however long it held its window closed before: over
// RTSP it no longer holds the stream back (PeerHolding false: the node
// times its silent session out), over RTSPS its writer fails. The
// kernel probes its closed window at least once a timeout
// (probeWithin). Before, the probes' gap doubled from 200 ms at each
// one, answered or not, up to 120 s: once it had doubled seven times
// (25.6 s, after 25 s of the window closed) the host gone was seen
// only after two more probes, over a minute later (two to four minutes
// after a pause of minutes).
func TestStoppedViewerHostGoneSeen(t *testing.T) {
	p := newPath(t, 1500)
	l, err := net.Listen("tcp", net.JoinHostPort(p.host.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plain, _ := p.acceptFrom(t, l)
	wp := NewConnWriter(plain, 64<<10, 0)
	var optErr error
	wp.rc.Control(func(fd uintptr) { _, optErr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RTO_MAX_MS) })
	if optErr != nil {
		t.Skipf("this kernel has no TCP_RTO_MAX_MS (Linux 6.15): %v", optErr)
	}
	srv := p.tlsFrom(t, l)
	wt := NewConnWriter(srv, 64<<10, 0)
	defer wt.Close()
	if wp.Timeout() != 10*time.Second || wt.Timeout() != 10*time.Second {
		t.Fatalf("writers' timeouts %v, %v: want the node's 10 s", wp.Timeout(), wt.Timeout())
	}
	// Neither viewer reads: their windows close, their writers' bytes
	// wait for them, alive.
	chunk := make([]byte, 1400)
	for i := 0; i < 40; i++ {
		if _, err := wp.TryWrite(chunk); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.TryWrite(chunk); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 10*time.Second, "both viewers seen holding the stream back, alive", func() bool {
		return wp.PeerHolding() && wt.PeerHolding()
	})
	// Held closed until the kernel doubled the probes' gap seven times
	// (probed 25 s: it would next wait 25.6 s, then 51.2 s).
	waitUntil(t, 60*time.Second, "the probes of both windows backed off seven times", func() bool {
		return probeBackoff(wp.rc) >= 7 && probeBackoff(wt.trc) >= 7
	})
	if !wp.PeerHolding() || !wt.PeerHolding() {
		t.Fatal("a viewer holding its window closed, alive, no longer seen holding the stream back")
	}
	if _, err := wt.TryWrite(chunk); err != nil {
		t.Fatalf("writer of a viewer holding its window closed, alive, failed: %v", err)
	}
	// Their host gone: the link down on its side.
	nsIf := strings.TrimSuffix(p.hostIf, "h") + "n"
	if err := ipCmd("-n", p.ns, "link", "set", nsIf, "down"); err != nil {
		t.Fatal(err)
	}
	gone := time.Now()
	var plainGone, tlsGone time.Duration
	waitUntil(t, 45*time.Second, "both viewers seen gone (RTSP: not holding the stream back; RTSPS: its writer failed)", func() bool {
		if plainGone == 0 && !wp.PeerHolding() {
			plainGone = time.Since(gone)
		}
		if tlsGone == 0 {
			if _, err := wt.TryWrite(chunk); err != nil {
				tlsGone = time.Since(gone)
			}
		}
		return plainGone > 0 && tlsGone > 0
	})
	t.Logf("host gone seen after %v (RTSP), %v (RTSPS)", plainGone.Round(time.Millisecond), tlsGone.Round(time.Millisecond))
}
