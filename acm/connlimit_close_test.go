package acm

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"vodcluster/proto/connlimit/connlimittest"
	"vodcluster/proto/grpctls/grpctlstest"
)

// Every connection the front door closes itself frees its client
// address's slot, while the client keeps its end open: otherwise each
// such close would hold a slot of max_conns_per_addr for good, and an
// address (a carrier-grade NAT's, with many households behind it) would
// be locked out once it had lost that many. The closes: an RTSP request
// that does not parse (400, then closed), an RTSPS handshake that fails
// or never ends (tlsHandshakeTimeout), an HTTP request with
// "Connection: close", one that does not parse, an idle keep-alive
// connection net/http closes, a plain HTTP request to the HTTPS front
// door (net/http answers it on the raw connection), a TLS handshake that
// fails there; and the manager's Close with connections open.
func TestFrontDoorConnectionSlotsFreedOnEveryClose(t *testing.T) {
	was := tlsHandshakeTimeout
	t.Cleanup(func() { tlsHandshakeTimeout = was }) // after the managers' own cleanups
	tlsHandshakeTimeout = 200 * time.Millisecond
	_, rtspsCfg, _ := grpctlstest.TLS(t, "127.0.0.1")
	_, httpsCfg, httpsClient := grpctlstest.TLS(t, "127.0.0.1")
	plain := newManager(t, "", func(m *Manager) {
		m.MaxConnsPerAddr = 64
		m.RTSPTLS, m.RTSPSListen = rtspsCfg, "127.0.0.1:0"
	})
	secure := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 64; m.HTTPTLS = httpsCfg })
	client := netip.MustParsePrefix("127.0.0.1/32")

	// closedByServer opens a connection to addr from 127.0.0.1, runs do
	// on it, and waits until the manager has closed it (the client reads
	// EOF or a reset) and freed its slot; the client's end stays open.
	closedByServer := func(e *env, what, addr string, do func(nc net.Conn)) {
		t.Helper()
		nc := connlimittest.DialFrom(t, "127.0.0.1", addr)
		waitFor(t, 10*time.Second, what+": the connection counted", func() bool { return e.m.conns.Open(client) == 1 })
		do(nc)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil && isTimeout(err) {
			t.Fatalf("%s: the manager did not close the connection in 10 s", what)
		}
		waitFor(t, 10*time.Second, what+": the slot freed", func() bool { return e.m.conns.Open(client) == 0 })
	}
	send := func(s string) func(net.Conn) {
		return func(nc net.Conn) {
			if _, err := io.WriteString(nc, s); err != nil {
				t.Fatal(err)
			}
		}
	}

	closedByServer(plain, "RTSP request that does not parse", plain.m.RTSPAddr(), send("DESCRIBE\r\n\r\n"))
	closedByServer(plain, "RTSPS handshake that fails", plain.m.RTSPSAddr(), send("OPTIONS rtsp://x/ RTSP/1.0\r\nCSeq: 1\r\n\r\n"))
	closedByServer(plain, "RTSPS handshake never ended", plain.m.RTSPSAddr(), send(""))
	closedByServer(plain, "HTTP Connection: close", plain.m.HTTPAddr(),
		send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	closedByServer(plain, "HTTP request that does not parse", plain.m.HTTPAddr(), send("GET\r\n\r\n"))
	closedByServer(plain, "HTTP idle keep-alive connection", plain.m.HTTPAddr(), func(nc net.Conn) {
		send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")(nc)
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.Close {
			t.Fatal("the keep-alive connection closed after its response")
		}
		// Idle now: net/http closes its idle connections (as it does at
		// IdleTimeout or at Shutdown).
		plain.m.httpSrv.SetKeepAlivesEnabled(false)
	})
	closedByServer(secure, "plain HTTP to the HTTPS front door", secure.m.HTTPAddr(), send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	closedByServer(secure, "HTTPS handshake that fails", secure.m.HTTPAddr(), send("\x16\x03\x01\x00\x05hello"))

	// The manager's Close with connections open on each listener
	// (RTSPS and HTTPS handshaken, so that each is past its accept).
	for _, addr := range []string{plain.m.RTSPAddr(), plain.m.HTTPAddr()} {
		connlimittest.DialFrom(t, "127.0.0.1", addr)
	}
	rc, err := tls.Dial("tcp", plain.m.RTSPSAddr(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hc, err := tls.Dial("tcp", secure.m.HTTPAddr(), httpsClient)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	waitFor(t, 10*time.Second, "the connections counted", func() bool {
		return plain.m.conns.Open(client) == 3 && secure.m.conns.Open(client) == 1
	})
	for _, e := range []*env{plain, secure} {
		if err := e.m.Close(); err != nil {
			t.Fatal(err)
		}
		if n := e.m.conns.Open(client); n != 0 {
			t.Errorf("%d connections counted after Close", n)
		}
	}
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
