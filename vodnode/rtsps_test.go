package vodnode

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"vodcluster/proto/grpctls/grpctlstest"
)

// The node's RTSPS listener answers RTSP inside TLS (verified against
// the CA), and closes a client that does not complete its handshake after
// tlsHandshakeTimeout rather than the session timeout.
func TestRTSPSListener(t *testing.T) {
	was := tlsHandshakeTimeout
	t.Cleanup(func() { tlsHandshakeTimeout = was }) // after the server's own cleanup
	tlsHandshakeTimeout = 200 * time.Millisecond
	_, cfg, cliCfg := grpctlstest.TLS(t, "127.0.0.1")
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) { n.RTSPTLS, n.RTSPSListen = cfg, "127.0.0.1:0" })
	if n.RTSPSAddr() == "" || n.registerRequest().GetRtspsAddr() != n.RTSPSAddr() {
		t.Fatalf("RTSPS address %q, registered %q", n.RTSPSAddr(), n.registerRequest().GetRtspsAddr())
	}

	cliCfg.ServerName = "127.0.0.1"
	tc, err := tls.Dial("tcp", n.RTSPSAddr(), cliCfg)
	if err != nil {
		t.Fatalf("TLS to the node (verified): %v", err)
	}
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(tc, "OPTIONS rtsps://%s/ RTSP/1.0\r\nCSeq: 1\r\n\r\n", n.RTSPSAddr())
	if line, err := bufio.NewReader(tc).ReadString('\n'); err != nil || !strings.HasPrefix(line, "RTSP/1.0 200") {
		t.Fatalf("OPTIONS over RTSPS: %q %v", line, err)
	}

	// A session played over RTSPS counts under rtsps in vodnode_sessions,
	// one over plain RTSP under rtsp.
	sc, err := tls.Dial("tcp", n.RTSPSAddr(), cliCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	secure := &testClient{t: t, c: sc, br: bufio.NewReader(sc)}
	// Over RTSPS the media go inside the TLS connection: a SETUP asking
	// for UDP only is 461 (the token stays good for the retry), a list
	// with UDP first gets its interleaved entry.
	tlsURL := "rtsps://" + n.RTSPSAddr() + "/s/" + mint(t, "over-tls", "sample-001", "node-1", "127.0.0.1", time.Minute) + "/vod/sample-001"
	if res := secure.do("SETUP", tlsURL+"/trackID=0", "Transport", "RTP/AVP;unicast;client_port=9800-9801"); res.StatusCode != 461 {
		t.Fatalf("SETUP over RTSPS asking for UDP: %s, want 461", statusLine(res))
	}
	res := secure.do("SETUP", tlsURL+"/trackID=0", "Transport", "RTP/AVP;unicast;client_port=9800-9801,RTP/AVP/TCP;unicast;interleaved=0-1")
	if tr := res.Header["Transport"]; res.StatusCode != 200 || len(tr) != 1 || !strings.HasPrefix(tr[0], "RTP/AVP/TCP;") {
		t.Fatalf("SETUP over RTSPS, UDP then TCP: %s %v, want the interleaved entry", statusLine(res), tr)
	}
	if res := secure.do("PLAY", tlsURL+"/", "Session", sessionID(res)); res.StatusCode != 200 {
		t.Fatalf("PLAY over RTSPS: %s", statusLine(res))
	}
	dialRTSP(t, n).play(nodeURL(n, mint(t, "plain", "sample-002", "node-1", "127.0.0.1", time.Minute), "sample-002"))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(nodeCollector{n})
	want := "vodnode_sessions{protocol=\"http\"} 0\nvodnode_sessions{protocol=\"rtsp\"} 1\nvodnode_sessions{protocol=\"rtsps\"} 1\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader("# HELP vodnode_sessions Live sessions on the node, by protocol (rtsp, rtsps, http).\n# TYPE vodnode_sessions gauge\n"+want), "vodnode_sessions"); err != nil {
		t.Error(err)
	}

	nc, err := net.Dial("tcp", n.RTSPSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("a client that never starts its handshake: %v, want the connection closed", err)
	}
}
