package connlimit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"vodcluster/proto/connlimit/connlimittest"
)

// hold opens a connection from the loopback address from to addr and
// waits until it is served: with Max 1 the address is at its limit.
func hold(t *testing.T, from, addr string) {
	t.Helper()
	if !served(t, connlimittest.DialFrom(t, from, addr)) {
		t.Fatalf("%s's first connection not served", from)
	}
}

// A refused connection is answered in its request's protocol: HTTP sent
// to an RTSP listener in HTTP (a browser, RTSP over HTTP tunnelling), on
// an HTTP listener 503 with Connection: close, Retry-After and the
// reason, a HEAD's without a body; on a Close listener nothing is
// written.
func TestRefusalAnswers(t *testing.T) {
	rtsp := serve(t, New(Config{Max: 1, Setting: "max_conns_per_addr"}), RTSP)
	hold(t, "127.0.0.1", rtsp)
	nc := connlimittest.DialFrom(t, "127.0.0.1", rtsp)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, "GET /vod/t1 HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HTTP to the RTSP listener over the limit: %v %v", res, err)
	}
	res.Body.Close()

	web := serve(t, New(Config{Max: 1, Setting: "max_conns_per_addr"}), HTTP)
	hold(t, "127.0.0.1", web)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		nc := connlimittest.DialFrom(t, "127.0.0.1", web)
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(nc, method+" /vod/t1 HTTP/1.1\r\nHost: x\r\n\r\n")
		req, _ := http.NewRequest(method, "/", nil)
		res, err := http.ReadResponse(bufio.NewReader(nc), req)
		if err != nil {
			t.Fatalf("HTTP %s over the limit: %v", method, err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusServiceUnavailable || !res.Close || res.Header.Get("Retry-After") != "5" ||
			strings.Contains(string(body), Message) != (method == http.MethodGet) {
			t.Fatalf("HTTP %s over the limit: %s %v %q", method, res.Status, res.Header, body)
		}
	}

	closing := serve(t, New(Config{Max: 1}), Close)
	hold(t, "127.0.0.1", closing)
	nc = connlimittest.DialFrom(t, "127.0.0.1", closing)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, "\x16\x03\x01\x00\x05hello")                                                 // the start of a ClientHello
	if b, err := io.ReadAll(nc); len(b) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) { // the hello unread: a reset
		t.Fatalf("a Close listener over the limit: read %q, %v; want a close with nothing written", b, err)
	}
}

// A flood of connections over the limit from many addresses, none
// sending a byte, is answered MaxAnswering at a time (and at most
// MaxAnsweringPerKey of one address), the others closed at once, and
// Accept goes on: another address is served while every answer waits
// for its request.
func TestRefusalFloodDoesNotBlockAccept(t *testing.T) {
	var refused counter
	l := New(Config{Max: 1, Refused: refused.refused, AnswerTimeout: 5 * time.Second})
	addr := serve(t, l, RTSP)
	const addrs, each = MaxAnswering/MaxAnsweringPerKey + 2, MaxAnsweringPerKey + 2 // more than MaxAnswering answerable
	from := fromAddrs(addrs)
	for _, a := range from {
		hold(t, a, addr)
	}
	const flood = addrs * each
	conns := make([]net.Conn, 0, flood)
	start := time.Now()
	for range each {
		for _, a := range from {
			conns = append(conns, connlimittest.DialFrom(t, a, addr))
		}
	}
	waitFor(t, 10*time.Second, "the flood refused", func() bool { return refused.n.Load() == flood })
	if n := l.Answering(); n != MaxAnswering {
		t.Fatalf("%d refusals being answered, want %d", n, MaxAnswering)
	}
	if !served(t, connlimittest.DialFrom(t, "127.0.0.2", addr)) {
		t.Fatal("127.0.0.2 not served during the flood")
	}
	if waited := time.Since(start); waited >= 5*time.Second {
		t.Fatalf("the flood and another address's connection took %v, the answers' wait", waited)
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
	if answered != MaxAnswering || closed != flood-MaxAnswering {
		t.Fatalf("%d answered, %d closed at once, want %d and %d", answered, closed, MaxAnswering, flood-MaxAnswering)
	}
	for a, n := range answeredOf {
		if n > MaxAnsweringPerKey {
			t.Fatalf("%s had %d refusals answered, want at most %d", a, n, MaxAnsweringPerKey)
		}
	}
	waitFor(t, 10*time.Second, "the answer slots freed", func() bool { return l.Answering() == 0 })
}

// One address flooding silent connections over its limit has at most
// MaxAnsweringPerKey of them answered at a time, the others closed at
// once: another address over its own limit still gets its 503 with its
// CSeq (the flood took every answer for AnswerTimeout each, and the
// other address's refusal was closed bare).
func TestRefusalFloodLeavesAnswersForOthers(t *testing.T) {
	var refused counter
	l := New(Config{Max: 1, Refused: refused.refused, AnswerTimeout: time.Minute})
	addr := serve(t, l, RTSP)
	hold(t, "127.0.0.1", addr)
	hold(t, "127.0.0.2", addr)
	const flood = MaxAnswering + 16
	for range flood {
		connlimittest.DialFrom(t, "127.0.0.1", addr)
	}
	waitFor(t, 10*time.Second, "the flood refused", func() bool { return refused.n.Load() == flood })
	if n := l.Answering(); n != MaxAnsweringPerKey {
		t.Fatalf("%d of one address's refusals being answered, want %d", n, MaxAnsweringPerKey)
	}
	nc := connlimittest.DialFrom(t, "127.0.0.2", addr)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(nc, "DESCRIBE rtsp://x/vod/t1 RTSP/1.0\r\nCSeq: 9\r\n\r\n")
	b, _ := io.ReadAll(nc)
	if !strings.HasPrefix(string(b), "RTSP/1.0 503 Service Unavailable ("+Message+")\r\nCSeq: 9\r\n") {
		t.Fatalf("127.0.0.2 over its limit during 127.0.0.1's flood read %q", b)
	}
}

// CloseAnswers ends the answers in flight: a refused connection waiting
// for its first request is closed and its goroutine gone when it
// returns, not AnswerTimeout + Linger later; a refusal after it is
// closed at once.
func TestCloseAnswers(t *testing.T) {
	l := New(Config{Max: 1, AnswerTimeout: time.Minute})
	addr := serve(t, l, RTSP)
	hold(t, "127.0.0.1", addr)
	silent := connlimittest.DialFrom(t, "127.0.0.1", addr)
	waitFor(t, 10*time.Second, "the silent connection being answered", func() bool { return l.Answering() == 1 })
	l.CloseAnswers()
	if n := l.Answering(); n != 0 {
		t.Fatalf("%d refusals still being answered after CloseAnswers", n)
	}
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, silent); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the refused connection still open 10 s after CloseAnswers")
		}
	}
	a, b := net.Pipe()
	defer b.Close()
	if l.startAnswer(a, netip.MustParsePrefix("127.0.0.3/32")) {
		t.Fatal("an answer started after CloseAnswers")
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
