package acm

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"vodcluster/proto/grpctls/grpctlstest"
	"vodcluster/proto/logtest"
)

// TestSetupWithATransportNoNodeServes: a SETUP at the front door whose
// Transport no node can serve (an unknown profile, multicast, UDP with no
// client port; MPEG-TS in UDP for elementary streams; UDP over RTSPS) or
// that has no Transport is refused there (461, 400) before it is admitted,
// and so is one of a track no node has (404) or of the elementary streams'
// aggregate URL (459):
// no session is held for the subscriber and no node has bit/s reserved,
// where it was admitted and redirected to a node that refused it. Each is
// counted (unsupported_transport) and the first logged with its Transport.
// The client that corrects its list on the same connection is redirected.
func TestSetupWithATransportNoNodeServes(t *testing.T) {
	_, cfg, cli := grpctlstest.TLS(t, "127.0.0.1")
	cli.ServerName = "127.0.0.1"
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.RTSPTLS, m.RTSPSListen = cfg, "127.0.0.1:0"
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	counted := func(proto string) float64 {
		return testutil.ToFloat64(requestsTotal.WithLabelValues(proto, outcomeBadTransport))
	}
	plain, tls0 := counted("rtsp"), counted("rtsps")
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", rtsps: "127.0.0.1:7002"})
	c := e.dialRTSP()
	setup := func(path, transport string) *base.Response {
		t.Helper()
		h := basicHeader("demo", "demo")
		if transport != "" {
			h["Transport"] = base.HeaderValue{transport}
		}
		return c.mustDo(base.Setup, path, h)
	}
	for _, tc := range []struct {
		path, transport string
		code            base.StatusCode
		reason          string
	}{
		{"/vod/t1/trackID=0", "FOO/BAR", base.StatusUnsupportedTransport, "none of RTP/AVP"},
		{"/vod/t1/trackID=0", "RTP/AVP;multicast;port=5000-5001, RTP/SAVP;unicast;client_port=5000-5001", base.StatusUnsupportedTransport, "none of RTP/AVP"},
		{"/vod/t1/trackID=0", "RTP/AVP;unicast", base.StatusUnsupportedTransport, "with client_port over UDP"},
		{"/vod/t1/es/trackID=1", "MP2T/UDP;unicast;client_port=5000", base.StatusUnsupportedTransport, "elementary streams need RTP"},
		{"/vod/t1/trackID=0", "", base.StatusBadRequest, "needs a Transport header"},
		{"/vod/t1/trackID=0", " ", base.StatusBadRequest, "needs a Transport header"}, // empty: it was 461
		// the track: the MPEG-TS is trackID=0, the elementary streams
		// trackID=1 and up, each set up on its own
		{"/vod/t1/trackID=1", "RTP/AVP/TCP;unicast", base.StatusNotFound, "no track 1: the title is one MPEG-TS track, trackID=0"},
		{"/vod/t1/es/trackID=0", "RTP/AVP/TCP;unicast", base.StatusNotFound, "no track 0 of the elementary streams"},
		{"/vod/t1/es", "RTP/AVP/TCP;unicast", base.StatusAggregateOperationNotAllowed, "SETUP each track"},
		{"/vod/t1/es/", "RTP/AVP/TCP;unicast", base.StatusAggregateOperationNotAllowed, "SETUP each track"},
	} {
		res := setup(tc.path, tc.transport)
		if res.StatusCode != tc.code || !strings.Contains(res.StatusMessage, tc.reason) {
			t.Errorf("SETUP %s with %q: %d %q, want %d with %q", tc.path, tc.transport, res.StatusCode, res.StatusMessage, tc.code, tc.reason)
		}
		if _, ok := res.Header["Location"]; ok {
			t.Errorf("SETUP %s with %q redirected to %v", tc.path, tc.transport, res.Header["Location"])
		}
	}
	// Over RTSPS the media go inside the TLS connection: UDP only is 461.
	nc, err := tls.Dial("tcp", e.m.RTSPSAddr(), cli)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(nc, "SETUP rtsps://%s/vod/t1/trackID=0 RTSP/1.0\r\nCSeq: 1\r\nAuthorization: %s\r\nTransport: RTP/AVP;unicast;client_port=5000-5001\r\n\r\n",
		e.m.RTSPSAddr(), basicHeader("demo", "demo")["Authorization"][0])
	line, err := textproto.NewReader(bufio.NewReader(nc)).ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, "RTSP/1.0 461 ") || !strings.Contains(line, "over RTSPS") {
		t.Errorf("SETUP over RTSPS with UDP only: %q, want 461 naming RTSPS", line)
	}
	if ss := e.sessions(); len(ss) != 0 {
		t.Fatalf("sessions held after refused SETUPs: %+v", ss)
	}
	if n, ntls := counted("rtsp")-plain, counted("rtsps")-tls0; n != 6 || ntls != 1 {
		t.Errorf("counted %v over RTSP and %v over RTSPS as unsupported_transport, want 6 and 1", n, ntls)
	}
	if !strings.Contains(log.String(), `msg="SETUP refused at the front door: no node serves its Transport`) || !strings.Contains(log.String(), "transport=[FOO/BAR]") {
		t.Errorf("no line for the refusals:\n%s", log.String())
	}
	if got := e.reserved("n1"); got != 0 {
		t.Fatalf("%d bit/s reserved after refused SETUPs", got)
	}
	// The client corrects its Transport on the same connection: served.
	for _, tc := range []struct{ path, transport string }{
		{"/vod/t1/trackID=0", "FOO/BAR, MP2T/UDP;unicast;client_port=5000"},
		{"/vod/t2/es/trackID=1", "MP2T/UDP;unicast;client_port=5000, RTP/AVP/TCP;unicast"},
		{"/vod/t3", "RTP/AVP;unicast;client_port=5000-5001"},
		{"/vod/t2/es?x=1/trackID=2", "RTP/AVP/TCP;unicast"}, // a track in the query: the node's to check
	} {
		if res := setup(tc.path, tc.transport); res.StatusCode != base.StatusFound {
			t.Errorf("SETUP %s with %q: %d %q, want 302", tc.path, tc.transport, res.StatusCode, res.StatusMessage)
		}
	}
	// A list over several Transport lines is one list (RFC 2326 §4.2).
	h := basicHeader("demo", "demo")
	h["Transport"] = base.HeaderValue{"FOO/BAR", "RTP/AVP/TCP;unicast"}
	if res := e.dialRTSP().mustDo(base.Setup, "/vod/t1/trackID=0", h); res.StatusCode != base.StatusFound {
		t.Errorf("SETUP with a list over two Transport lines: %d %q, want 302", res.StatusCode, res.StatusMessage)
	}
	if ss := e.sessions(); len(ss) != 4 {
		t.Fatalf("%d sessions after four served SETUPs, want 4", len(ss))
	}
}

// TestSetupOnlyOverUDPAndTCPOnlyNodes: a SETUP at the front door that
// offers only UDP is refused 461 (saying the cluster sends over TCP only)
// when every node in service has tcp_only, before it is admitted, and a
// list with a TCP entry is admitted there; once a node that serves UDP is
// in service, such SETUPs go to it and no other, also after a DESCRIBE on
// the same connection was admitted on a tcp_only node. A DESCRIBE, which
// names no transport, may go to any node. ListNodes says which nodes
// have tcp_only.
func TestSetupOnlyOverUDPAndTCPOnlyNodes(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("tcp", nodeOpts{rtsp: "127.0.0.1:7001", tcpOnly: true})
	e.settled()
	refused := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeBadTransport))
	c := e.dialRTSP()
	do := func(method base.Method, path, transport string) *base.Response {
		t.Helper()
		h := basicHeader("demo", "demo")
		if transport != "" {
			h["Transport"] = base.HeaderValue{transport}
		}
		return c.mustDo(method, path, h)
	}
	const udp = "RTP/AVP;unicast;client_port=5000-5001, MP2T/UDP;unicast;client_port=5002"
	for _, path := range []string{"/vod/t1/trackID=0", "/vod/t1/es/trackID=1"} {
		res := do(base.Setup, path, udp)
		if res.StatusCode != base.StatusUnsupportedTransport || !strings.Contains(res.StatusMessage, "TCP only") {
			t.Errorf("SETUP %s offering only UDP to tcp_only nodes: %d %q, want 461 saying TCP only", path, res.StatusCode, res.StatusMessage)
		}
	}
	if ss := e.sessions(); len(ss) != 0 {
		t.Fatalf("sessions held after refused SETUPs: %+v", ss)
	}
	if got := testutil.ToFloat64(requestsTotal.WithLabelValues("rtsp", outcomeBadTransport)) - refused; got != 2 {
		t.Errorf("counted %v as unsupported_transport, want 2", got)
	}
	location := func(res *base.Response) string {
		t.Helper()
		if res.StatusCode != base.StatusFound || len(res.Header["Location"]) != 1 {
			t.Fatalf("%d %q, want 302", res.StatusCode, res.StatusMessage)
		}
		return res.Header["Location"][0]
	}
	if loc := location(do(base.Setup, "/vod/t1/trackID=0", udp+", RTP/AVP/TCP;unicast")); !strings.Contains(loc, "127.0.0.1:7001") {
		t.Errorf("SETUP with a TCP entry sent to %s, want the tcp_only node", loc)
	}
	if loc := location(do(base.Describe, "/vod/t2", "")); !strings.Contains(loc, "127.0.0.1:7001") {
		t.Errorf("DESCRIBE sent to %s, want the tcp_only node", loc)
	}
	// A node serving UDP joins: SETUPs offering only UDP go to it, the
	// ones of t2 and t1 too, DESCRIBEd and set up over TCP on this
	// connection on the tcp_only node.
	e.startNode("udp", nodeOpts{rtsp: "127.0.0.1:7003"})
	if !e.nodeInfo("tcp").GetTcpOnly() || e.nodeInfo("udp").GetTcpOnly() {
		t.Errorf("ListNodes tcp_only: %v for the tcp_only node, %v for the other", e.nodeInfo("tcp").GetTcpOnly(), e.nodeInfo("udp").GetTcpOnly())
	}
	if got := nodeInfo(t, e.m); got != "tcp=,tcp_only=true udp=,tcp_only=false" {
		t.Errorf("vodcluster_node_info: %q, want the tcp_only node labelled so", got)
	}
	for _, path := range []string{"/vod/t2/trackID=0", "/vod/t3/trackID=0", "/vod/t1/trackID=0", "/vod/t3/es/trackID=1"} {
		if loc := location(do(base.Setup, path, udp)); !strings.Contains(loc, "127.0.0.1:7003") {
			t.Errorf("SETUP %s offering only UDP sent to %s, want the node that serves UDP", path, loc)
		}
	}
	// The sessions of t1 and t2 on the tcp_only node, their viewers never
	// there, ended as they moved.
	if got := e.reserved("tcp"); got != 0 {
		t.Errorf("%d bit/s still reserved on the tcp_only node after the moves", got)
	}
}
