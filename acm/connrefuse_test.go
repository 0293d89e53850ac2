package acm

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/bluenviron/gortsplib/v4/pkg/conn"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"vodcluster/proto/connlimit"
	"vodcluster/proto/connlimit/connlimittest"
	"vodcluster/proto/grpctls/grpctlstest"
)

// holdOne opens a connection from 127.0.0.1 to the manager's RTSP front
// door and waits until it is counted: with MaxConnsPerAddr 1 the address
// is at its limit.
func holdOne(t *testing.T, e *env) {
	t.Helper()
	holdFrom(t, e, "127.0.0.1")
}

// A connection over max_conns_per_addr is answered, not closed bare (a
// player read EOF, which it cannot tell from a crash): on the RTSP front
// door 503 with the request's CSeq, the reason in the reason phrase,
// Retry-After and a text body; an HTTP request sent to the RTSP port is
// answered in HTTP; on the HTTP front door 503 with Connection: close,
// Retry-After and the reason in the body, a HEAD's without a body.
func TestFrontDoorRefusalAnswered(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 1 })
	holdOne(t, e)
	before := testutil.ToFloat64(connsRefused.WithLabelValues("rtsp"))

	nc := connlimittest.DialFrom(t, "127.0.0.1", e.m.RTSPAddr())
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, "DESCRIBE rtsp://"+e.m.RTSPAddr()+"/vod/t1 RTSP/1.0\r\nCSeq: 7\r\nUser-Agent: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := conn.NewConn(nc).ReadResponse()
	if err != nil {
		t.Fatalf("RTSP over the limit: %v, want a 503", err)
	}
	if res.StatusCode != base.StatusServiceUnavailable || res.StatusMessage != "Service Unavailable ("+connlimit.Message+")" ||
		len(res.Header["CSeq"]) != 1 || res.Header["CSeq"][0] != "7" || len(res.Header["Retry-After"]) != 1 ||
		!strings.Contains(string(res.Body), "max_conns_per_addr") {
		t.Fatalf("RTSP over the limit: %d %q %v %q", res.StatusCode, res.StatusMessage, res.Header, res.Body)
	}
	if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the 503: %v, want the connection closed", err)
	}
	if got := testutil.ToFloat64(connsRefused.WithLabelValues("rtsp")) - before; got != 1 {
		t.Fatalf("refusals counted: %v, want 1", got)
	}

	// HTTP to the RTSP port (a browser, RTSP over HTTP tunnelling).
	nc = connlimittest.DialFrom(t, "127.0.0.1", e.m.RTSPAddr())
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, "GET /vod/t1 HTTP/1.1\r\nHost: x\r\n\r\n")
	hres, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || hres.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HTTP to the RTSP port over the limit: %v %v", hres, err)
	}
	hres.Body.Close()

	hc := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}).DialContext},
		Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, "http://"+e.m.HTTPAddr()+"/vod/t1", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("HTTP %s over the limit: %v, want a 503", method, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantBody := method == http.MethodGet
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || resp.Header.Get("Retry-After") == "" ||
			strings.Contains(string(body), connlimit.Message) != wantBody {
			t.Fatalf("HTTP %s over the limit: %s %v %q", method, resp.Status, resp.Header, body)
		}
	}
}

// Real clients print the refusal: ffprobe the RTSP 503, curl the HTTP
// one with its text.
func TestFFprobeAndCurlSeeTooManyConnections(t *testing.T) {
	ffprobe, curl := needTool(t, "ffprobe"), needTool(t, "curl")
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 1 })
	holdOne(t, e)
	out := runClient(t, ffprobe, "-v", "error", "-rtsp_transport", "tcp", "rtsp://demo:demo@"+e.m.RTSPAddr()+"/vod/t1")
	if !strings.Contains(out, "method OPTIONS failed: 503 Service Unavailable ("+connlimit.Message+")") {
		t.Fatalf("ffprobe over the limit:\n%s", out)
	}
	out = runClient(t, curl, "-sS", "-i", "--max-time", "10", "http://"+e.m.HTTPAddr()+"/vod/t1")
	if !strings.Contains(out, "HTTP/1.1 503 Service Unavailable") || !strings.Contains(out, connlimit.Message) {
		t.Fatalf("curl over the limit:\n%s", out)
	}
}

// holdFrom opens a connection from the loopback address from to the
// manager's RTSP front door and waits until it is counted: with
// MaxConnsPerAddr 1 the address is at its limit.
func holdFrom(t *testing.T, e *env, from string) {
	t.Helper()
	connlimittest.DialFrom(t, from, e.m.RTSPAddr())
	waitFor(t, 10*time.Second, from+"'s held connection counted", func() bool {
		return e.m.conns.Open(netip.MustParsePrefix(from+"/32")) == 1
	})
}

// On RTSPS and HTTPS a connection over the limit is closed at accept
// with no byte written: a plain-text 503 would be garbage inside the TLS
// handshake the client starts, and answering in TLS would cost a
// handshake per refused connection.
func TestFrontDoorRefusalOverTLSClosed(t *testing.T) {
	_, rtspsCfg, _ := grpctlstest.TLS(t, "127.0.0.1")
	_, httpsCfg, _ := grpctlstest.TLS(t, "127.0.0.1")
	e := newManager(t, "", func(m *Manager) {
		m.MaxConnsPerAddr = 1
		m.RTSPTLS, m.RTSPSListen = rtspsCfg, "127.0.0.1:0"
		m.HTTPTLS = httpsCfg
	})
	holdOne(t, e)
	for _, addr := range []string{e.m.RTSPSAddr(), e.m.HTTPAddr()} {
		nc := connlimittest.DialFrom(t, "127.0.0.1", addr)
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(nc, "\x16\x03\x01\x00\x05hello") // the start of a ClientHello
		b, err := io.ReadAll(nc)
		if isTimeout(err) || len(b) != 0 {
			t.Fatalf("%s over the limit: read %q, %v; want the connection closed with nothing written", addr, b, err)
		}
	}
	if n := e.m.conns.Answering(); n != 0 {
		t.Fatalf("%d refusals being answered on TLS listeners", n)
	}
}

// The manager's Close ends the answers in flight: a refused connection
// waiting for its first request is closed and its goroutine gone when
// Close returns, not connlimit.DefaultAnswerTimeout later (it held its
// socket, and its answer slot, past the manager's end).
func TestFrontDoorRefusalEndsWithClose(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 1 })
	holdOne(t, e)
	silent := connlimittest.DialFrom(t, "127.0.0.1", e.m.RTSPAddr())
	waitFor(t, 10*time.Second, "the silent connection being answered", func() bool { return e.m.conns.Answering() == 1 })
	e.m.Close()
	if n := e.m.conns.Answering(); n != 0 {
		t.Fatalf("%d refusals still being answered after Close", n)
	}
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, silent); isTimeout(err) {
		t.Fatal("the refused connection still open 10 s after Close")
	}
}
