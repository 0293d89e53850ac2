package vodnode

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"vodcluster/proto/connlimit"
	"vodcluster/proto/connlimit/connlimittest"
	"vodcluster/proto/grpctls/grpctlstest"
)

// rtspOptions sends OPTIONS with CSeq cseq on nc and returns what the node
// wrote until it closed the connection or a whole answer was read.
func rtspOptions(t *testing.T, nc net.Conn, cseq string) string {
	t.Helper()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, "OPTIONS rtsp://x/ RTSP/1.0\r\nCSeq: "+cseq+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var b []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(b), "\r\n\r\n") {
		n, err := nc.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return string(b)
}

// A node caps the open connections of one client address over its RTSP,
// RTSPS and HTTP listeners, as the front door does (max_conns_per_addr):
// one more is answered 503 in its protocol (RTSP with its CSeq; curl
// prints the HTTP one's reason) or closed bare on RTSPS, and counted in
// vodnode_connections_refused_total, while another address is served.
// One address held 300 idle connections on a node.
func TestNodeConnectionsPerAddress(t *testing.T) {
	curl := "curl"
	if _, err := exec.LookPath(curl); err != nil {
		t.Skip("no curl")
	}
	_, rtspsCfg, _ := grpctlstest.TLS(t, "127.0.0.1")
	n := startNode(t, "", func(n *Node) {
		n.MaxConnsPerAddr = 1
		n.HTTPListen, n.MetricsListen = "127.0.0.1:0", "127.0.0.1:0"
		n.RTSPSListen, n.RTSPTLS = "127.0.0.1:0", rtspsCfg
	})
	held := connlimittest.DialFrom(t, "127.0.0.1", n.RTSPAddr())
	if got := rtspOptions(t, held, "1"); !strings.HasPrefix(got, "RTSP/1.0 200 OK\r\n") {
		t.Fatalf("the first connection: %q", got)
	}
	waitFor(t, 10*time.Second, "the held connection counted", func() bool {
		return n.connLimit.Open(netip.MustParsePrefix("127.0.0.1/32")) == 1
	})
	if got := rtspOptions(t, connlimittest.DialFrom(t, "127.0.0.1", n.RTSPAddr()), "7"); !strings.HasPrefix(got, "RTSP/1.0 503 Service Unavailable ("+connlimit.Message+")\r\nCSeq: 7\r\n") {
		t.Fatalf("a second RTSP connection from 127.0.0.1: %q, want 503 with CSeq 7", got)
	}
	out, _ := exec.Command(curl, "-sS", "-i", "--max-time", "10", "--interface", "127.0.0.1", "http://"+n.HTTPAddr()+"/vod/x").CombinedOutput()
	if !strings.Contains(string(out), "HTTP/1.1 503 Service Unavailable") || !strings.Contains(string(out), connlimit.Message+" (1, max_conns_per_addr)") {
		t.Fatalf("curl from 127.0.0.1 over the limit:\n%s", out)
	}
	tlsConn := connlimittest.DialFrom(t, "127.0.0.1", n.RTSPSAddr())
	tlsConn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(tlsConn, "\x16\x03\x01\x00\x05hello")
	if b, err := io.ReadAll(tlsConn); len(b) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) { // the hello unread: a reset
		t.Fatalf("RTSPS over the limit: read %q, %v; want a close with nothing written", b, err)
	}
	if got := rtspOptions(t, connlimittest.DialFrom(t, "127.0.0.2", n.RTSPAddr()), "2"); !strings.HasPrefix(got, "RTSP/1.0 200 OK\r\n") {
		t.Fatalf("127.0.0.2: %q", got)
	}
	resp, err := http.Get("http://" + n.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`vodnode_connections_refused_total{listener="rtsp"} 1`, `vodnode_connections_refused_total{listener="http"} 1`,
		`vodnode_connections_refused_total{listener="rtsps"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// MaxConnsPerAddr < 0 is no limit: the listeners are the bare ones.
func TestNodeConnectionsUnlimited(t *testing.T) {
	n := startNode(t, "", func(n *Node) { n.MaxConnsPerAddr = -1 })
	if n.connLimit != nil {
		t.Fatal("a limiter for -1")
	}
	if _, ok := n.rtspLn.(*net.TCPListener); !ok {
		t.Fatalf("no limit, yet the RTSP listener wrapped: %T", n.rtspLn)
	}
}
