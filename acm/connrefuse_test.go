package acm

import (
	"bufio"
	"fmt"
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

	nc := dialFrom(t, "127.0.0.1", e.m.RTSPAddr())
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, "DESCRIBE rtsp://"+e.m.RTSPAddr()+"/vod/t1 RTSP/1.0\r\nCSeq: 7\r\nUser-Agent: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := conn.NewConn(nc).ReadResponse()
	if err != nil {
		t.Fatalf("RTSP over the limit: %v, want a 503", err)
	}
	if res.StatusCode != base.StatusServiceUnavailable || res.StatusMessage != "Service Unavailable ("+refuseMessage+")" ||
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
	nc = dialFrom(t, "127.0.0.1", e.m.RTSPAddr())
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
			strings.Contains(string(body), refuseMessage) != wantBody {
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
	if !strings.Contains(out, "method OPTIONS failed: 503 Service Unavailable ("+refuseMessage+")") {
		t.Fatalf("ffprobe over the limit:\n%s", out)
	}
	out = runClient(t, curl, "-sS", "-i", "--max-time", "10", "http://"+e.m.HTTPAddr()+"/vod/t1")
	if !strings.Contains(out, "HTTP/1.1 503 Service Unavailable") || !strings.Contains(out, refuseMessage) {
		t.Fatalf("curl over the limit:\n%s", out)
	}
}

// holdFrom opens a connection from the loopback address from to the
// manager's RTSP front door and waits until it is counted: with
// MaxConnsPerAddr 1 the address is at its limit.
func holdFrom(t *testing.T, e *env, from string) {
	t.Helper()
	dialFrom(t, from, e.m.RTSPAddr())
	waitFor(t, 10*time.Second, from+"'s held connection counted", func() bool {
		return e.m.conns.count(netip.MustParsePrefix(from+"/32")) == 1
	})
}

// A flood of connections over the limit from many addresses, none
// sending a byte, is answered refuseAnswering at a time (and at most
// refuseAnsweringPerAddr of one address), the others closed at once,
// and Accept goes on: another address is served while every answer
// waits for its request.
func TestFrontDoorRefusalFloodDoesNotBlockAccept(t *testing.T) {
	was := refuseReadTimeout
	t.Cleanup(func() { refuseReadTimeout = was })
	refuseReadTimeout = 5 * time.Second
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 1 })
	const addrs, each = refuseAnswering/refuseAnsweringPerAddr + 2, refuseAnsweringPerAddr + 2 // more than refuseAnswering answerable
	from := make([]string, addrs)
	for i := range from {
		from[i] = fmt.Sprintf("127.0.0.%d", 10+i)
		holdFrom(t, e, from[i])
	}
	refused := func() float64 { return testutil.ToFloat64(connsRefused.WithLabelValues("rtsp")) }
	before := refused()
	const flood = addrs * each
	conns := make([]net.Conn, 0, flood)
	start := time.Now()
	for range each {
		for _, a := range from {
			conns = append(conns, dialFrom(t, a, e.m.RTSPAddr()))
		}
	}
	waitFor(t, 10*time.Second, "the flood refused", func() bool { return refused()-before == flood })
	if len(e.m.conns.answering) != refuseAnswering {
		t.Fatalf("%d refusals being answered, want %d", len(e.m.conns.answering), refuseAnswering)
	}
	if st, err := options(t, dialFrom(t, "127.0.0.2", e.m.RTSPAddr()), e.m.RTSPAddr()); err != nil || st != base.StatusOK {
		t.Fatalf("127.0.0.2 during the flood: %v %v", st, err)
	}
	if waited := time.Since(start); waited >= refuseReadTimeout {
		t.Fatalf("the flood and another address's OPTIONS took %v, the answers' wait", waited)
	}
	answered, closed := 0, 0
	answeredOf := map[string]int{}
	for _, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		b, err := io.ReadAll(nc)
		switch {
		case err != nil:
			t.Fatalf("a flood connection: %v", err)
		case strings.HasPrefix(string(b), "RTSP/1.0 503 "):
			answered++
			answeredOf[nc.LocalAddr().(*net.TCPAddr).IP.String()]++
		case len(b) == 0:
			closed++
		default:
			t.Fatalf("a flood connection read %q", b)
		}
	}
	if answered != refuseAnswering || closed != flood-refuseAnswering {
		t.Fatalf("%d answered, %d closed at once, want %d and %d", answered, closed, refuseAnswering, flood-refuseAnswering)
	}
	for a, n := range answeredOf {
		if n > refuseAnsweringPerAddr {
			t.Fatalf("%s had %d refusals answered, want at most %d", a, n, refuseAnsweringPerAddr)
		}
	}
	waitFor(t, 10*time.Second, "the answer slots freed", func() bool { return len(e.m.conns.answering) == 0 })
}

// One address flooding silent connections over its limit has at most
// refuseAnsweringPerAddr of them answered at a time, the others closed
// at once: another address over its own limit still gets its 503 with
// its CSeq (the flood took every answer for refuseReadTimeout each, and
// the other address's refusal was closed bare).
func TestFrontDoorRefusalFloodLeavesAnswersForOthers(t *testing.T) {
	was := refuseReadTimeout
	t.Cleanup(func() { refuseReadTimeout = was }) // after the manager's Close: no answer reads it then
	refuseReadTimeout = time.Minute
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 1 })
	holdFrom(t, e, "127.0.0.1")
	holdFrom(t, e, "127.0.0.2")
	refused := func() float64 { return testutil.ToFloat64(connsRefused.WithLabelValues("rtsp")) }
	before := refused()
	const flood = refuseAnswering + 16
	for range flood {
		dialFrom(t, "127.0.0.1", e.m.RTSPAddr())
	}
	waitFor(t, 10*time.Second, "the flood refused", func() bool { return refused()-before == flood })
	if n := len(e.m.conns.answering); n != refuseAnsweringPerAddr {
		t.Fatalf("%d of one address's refusals being answered, want %d", n, refuseAnsweringPerAddr)
	}

	nc := dialFrom(t, "127.0.0.2", e.m.RTSPAddr())
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, "DESCRIBE rtsp://"+e.m.RTSPAddr()+"/vod/t1 RTSP/1.0\r\nCSeq: 9\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := conn.NewConn(nc).ReadResponse()
	if err != nil {
		t.Fatalf("127.0.0.2 over its limit during 127.0.0.1's flood: %v, want a 503", err)
	}
	if res.StatusCode != base.StatusServiceUnavailable || len(res.Header["CSeq"]) != 1 || res.Header["CSeq"][0] != "9" {
		t.Fatalf("127.0.0.2 over its limit during 127.0.0.1's flood: %d %q %v", res.StatusCode, res.StatusMessage, res.Header)
	}
	if got := refused() - before; got != flood+1 {
		t.Fatalf("refusals counted: %v, want %d", got, flood+1)
	}
}

// The CSeq of a refused request: the first, digits only.
func TestCSeqOf(t *testing.T) {
	for _, c := range []struct{ head, want string }{
		{"OPTIONS * RTSP/1.0\r\nCSeq: 3\r\n\r\n", "3"},
		{"OPTIONS * RTSP/1.0\r\ncseq:12\r\nCSeq: 13\r\n\r\n", "12"},
		{"OPTIONS * RTSP/1.0\r\nUser-Agent: x\r\n\r\nCSeq: 4\r\n", ""},
		{"OPTIONS * RTSP/1.0\r\nCSeq: 4x\r\n\r\n", ""},
		{"OPTIONS * RTSP/1.0\nCSeq: 5\n\n", "5"},
		{"CSeq: 6\r\n\r\n", ""},
		{"", ""},
		{"\x00\xff\r\nCSeq: 99999999999\r\n", ""},
	} {
		if got := cseqOf([]byte(c.head)); got != c.want {
			t.Errorf("%q: %q, want %q", c.head, got, c.want)
		}
	}
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
		nc := dialFrom(t, "127.0.0.1", addr)
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(nc, "\x16\x03\x01\x00\x05hello") // the start of a ClientHello
		b, err := io.ReadAll(nc)
		if isTimeout(err) || len(b) != 0 {
			t.Fatalf("%s over the limit: read %q, %v; want the connection closed with nothing written", addr, b, err)
		}
	}
	if n := len(e.m.conns.answering); n != 0 {
		t.Fatalf("%d refusals being answered on TLS listeners", n)
	}
}

// The manager's Close ends the answers in flight: a refused connection
// waiting for its first request is closed and its goroutine gone when
// Close returns, not refuseReadTimeout + refuseLinger later (it held its
// socket, and its answer slot, past the manager's end).
func TestFrontDoorRefusalEndsWithClose(t *testing.T) {
	was := refuseReadTimeout
	t.Cleanup(func() { refuseReadTimeout = was }) // after the manager's Close: no answer reads it then
	refuseReadTimeout = time.Minute
	e := newManager(t, "", func(m *Manager) { m.MaxConnsPerAddr = 1 })
	holdOne(t, e)
	silent := dialFrom(t, "127.0.0.1", e.m.RTSPAddr())
	waitFor(t, 10*time.Second, "the silent connection being answered", func() bool { return len(e.m.conns.answering) == 1 })
	e.m.Close()
	if n := len(e.m.conns.answering); n != 0 {
		t.Fatalf("%d refusals still being answered after Close", n)
	}
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, silent); isTimeout(err) {
		t.Fatal("the refused connection still open 10 s after Close")
	}
	// A connection refused after Close (one Accept returned as the
	// listener closed) is closed at once.
	a, b := net.Pipe()
	defer b.Close()
	if e.m.conns.startAnswer(a, netip.MustParsePrefix("127.0.0.3/32")) {
		t.Fatal("an answer started after Close")
	}
}
