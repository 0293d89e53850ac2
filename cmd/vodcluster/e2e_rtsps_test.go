package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"vodcluster/cmd/internal/probe"
	"vodcluster/proto/grpctls"
	"vodcluster/proto/grpctls/grpctlstest"
)

// TestRTSPSThroughFrontDoor: with rtsp_tls_cert_file on the manager and
// the nodes, the front door answers RTSPS beside plain RTSP; a viewer that
// came over RTSPS is redirected to its node's rtsps:// address (verified
// against the CA), one that came over plain RTSP to rtsp://, and ffmpeg
// and ffprobe play the title over RTSPS end to end (media interleaved in
// the TLS connection).
func TestRTSPSThroughFrontDoor(t *testing.T) {
	f, err := grpctlstest.Write(t.TempDir(), "rtsps-", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := grpctls.ServerConfig(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.RTSPTLS = cfg })
	node := c.nodes[0]
	if c.manager.RTSPSAddr() == "" || node.RTSPSAddr() == "" {
		t.Fatalf("RTSPS listeners: front door %q, node %q", c.manager.RTSPSAddr(), node.RTSPSAddr())
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)

	dial := func(addr string, overTLS bool) net.Conn {
		t.Helper()
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if overTLS {
			tc := tls.Client(nc, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
			if err := tc.Handshake(); err != nil {
				t.Fatalf("TLS to %s (verified against the CA): %v", addr, err)
			}
			nc = tc
		}
		t.Cleanup(func() { nc.Close() })
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		return nc
	}
	describe := func(nc net.Conn, url string) (int, textproto.MIMEHeader) {
		t.Helper()
		auth := base64.StdEncoding.EncodeToString([]byte("demo:demo"))
		fmt.Fprintf(nc, "DESCRIBE %s RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\nAuthorization: Basic %s\r\n\r\n", url, auth)
		tp := textproto.NewReader(bufio.NewReader(nc))
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatal(err)
		}
		var code int
		fmt.Sscanf(line, "RTSP/1.0 %d", &code)
		return code, h
	}

	// Over RTSPS: 302 to the node's rtsps:// address, where the DESCRIBE
	// (over TLS again) gets the SDP.
	code, h := describe(dial(c.manager.RTSPSAddr(), true), "rtsps://"+c.manager.RTSPSAddr()+"/vod/sample-004")
	loc := h.Get("Location")
	if code != 302 || !strings.HasPrefix(loc, "rtsps://"+node.RTSPSAddr()+"/") {
		t.Fatalf("DESCRIBE over RTSPS: %d, Location %q; want 302 to rtsps://%s/…", code, loc, node.RTSPSAddr())
	}
	if code, h := describe(dial(node.RTSPSAddr(), true), loc); code != 200 || h.Get("Content-Type") != "application/sdp" ||
		!strings.HasPrefix(h.Get("Content-Base"), "rtsps://") {
		t.Fatalf("DESCRIBE at the node over RTSPS: %d %v", code, h)
	}
	// Over plain RTSP: rtsp:// as before.
	code, h = describe(dial(c.manager.RTSPAddr(), false), "rtsp://"+c.manager.RTSPAddr()+"/vod/sample-004")
	if loc := h.Get("Location"); code != 302 || !strings.HasPrefix(loc, "rtsp://"+node.RTSPAddr()+"/") {
		t.Fatalf("DESCRIBE over plain RTSP: %d, Location %q", code, loc)
	}
	// Plain RTSP to the RTSPS port gets no answer that plays.
	nc := dial(c.manager.RTSPSAddr(), false)
	fmt.Fprintf(nc, "OPTIONS rtsp://%s/ RTSP/1.0\r\nCSeq: 1\r\n\r\n", c.manager.RTSPSAddr())
	if line, _ := bufio.NewReader(nc).ReadString('\n'); strings.HasPrefix(line, "RTSP/1.0 200") {
		t.Fatalf("plain RTSP to the RTSPS port answered %q", line)
	}

	// The manager tells the RTSPS viewer's session from the plain one's.
	protos := map[string]int{}
	for _, s := range sessions(t, c.admin(t)) {
		protos[s.GetProtocol()]++
	}
	if protos["rtsps"] != 1 || protos["rtsp"] != 1 {
		t.Errorf("sessions by protocol %v, want one rtsps and one rtsp", protos)
	}

	// vodctl play's client (gortsplib) over RTSPS, verifying both
	// certificates against the CA (vodctl play --rtsps-ca).
	res, err := probe.PlayContext(fmt.Sprintf("rtsps://demo:demo@%s/vod/sample-005", c.manager.RTSPSAddr()),
		probe.Options{Duration: 2 * time.Second, TLSConfig: &tls.Config{RootCAs: roots}})
	if err != nil || res.VideoFrames < 30 || res.Server != node.RTSPSAddr() {
		t.Fatalf("probe over RTSPS: %v, %+v; want frames from %s", err, res, node.RTSPSAddr())
	}

	url := fmt.Sprintf("rtsps://demo:demo@%s/vod/sample-006", c.manager.RTSPSAddr())
	if p := ffmpegRun(t, 3, "-i", url); p.Err != nil || p.Frames < 70 {
		t.Fatalf("ffmpeg over RTSPS: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	if out, _ := rtspStatus(t, url); !strings.Contains(out, "mpegts") && !strings.Contains(out, "h264") {
		t.Fatalf("ffprobe over RTSPS:\n%s", out)
	}
}
