package vodnode

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// rawExchange writes raw bytes on a new connection and returns the first
// response and whether the node then closed the connection (at once) or
// still answers an OPTIONS.
func rawExchange(t *testing.T, n *Node, raw string) (*base.Response, bool) {
	t.Helper()
	c, err := net.Dial("tcp", n.RTSPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(c)
	var res base.Response
	if err := res.Unmarshal(br); err != nil {
		t.Fatalf("%q: no response: %v", raw, err)
	}
	io.WriteString(c, "OPTIONS * RTSP/1.0\r\nCSeq: 99\r\n\r\n")
	var next base.Response
	if err := next.Unmarshal(br); err == nil {
		return &res, false
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = br.ReadByte()
	return &res, err == io.EOF
}

// TestMalformedRequests: an unknown method is answered 501 with Public
// and the connection goes on; what cannot be read as an RTSP request
// (binary garbage, a CR inside a header line, another protocol) is answered 400 (505
// for another RTSP version) and the connection closed at once; a request
// with no CSeq or more than one is answered 400 with none, as the front
// door answers it (two were answered 200, both echoed).
func TestMalformedRequests(t *testing.T) {
	n := startNode(t, "")
	for _, tc := range []struct {
		name, raw string
		code      base.StatusCode
		closed    bool
		cseq      string
	}{
		{"unknown method", "FOO * RTSP/1.0\r\nCSeq: 7\r\n\r\n", base.StatusNotImplemented, false, "7"},
		{"known method not allowed", "RECORD rtsp://h/vod/x RTSP/1.0\r\nCSeq: 8\r\n\r\n", base.StatusMethodNotAllowed, false, "8"},
		{"binary garbage", "\x00\x01\x02\xff\xfe garbage\r\n\r\n", base.StatusBadRequest, true, ""},
		{"LF-only lines (RFC 2326 §4)", "OPTIONS * RTSP/1.0\nCSeq: 3\n\n", base.StatusOK, false, "3"},
		{"LF-only headers", "OPTIONS * RTSP/1.0\r\nCSeq: 4\n\n", base.StatusOK, false, "4"},
		{"CR inside a header line", "OPTIONS * RTSP/1.0\r\nCSeq: 9\rX: y\r\n\r\n", base.StatusBadRequest, true, ""},
		{"HTTP request", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", base.StatusBadRequest, true, ""},
		{"RTSP 2.0", "OPTIONS * RTSP/2.0\r\nCSeq: 5\r\n\r\n", base.StatusRTSPVersionNotSupported, true, "5"},
		{"request line too long", "OPTIONS " + strings.Repeat("a", 20000), base.StatusBadRequest, true, ""},
		{"no CSeq", "OPTIONS * RTSP/1.0\r\n\r\n", base.StatusBadRequest, false, ""},
		{"two CSeq", "OPTIONS * RTSP/1.0\r\nCSeq: 1\r\nCSeq: 2\r\n\r\n", base.StatusBadRequest, false, ""},
		{"header too large", "OPTIONS * RTSP/1.0\r\nCSeq: 6\r\nX: " + strings.Repeat("a", 20000), base.StatusBadRequest, true, "6"},
	} {
		res, closed := rawExchange(t, n, tc.raw)
		if res.StatusCode != tc.code {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.code)
		}
		if closed != tc.closed {
			t.Errorf("%s: connection closed %v, want %v", tc.name, closed, tc.closed)
		}
		if got := res.Header["CSeq"]; tc.cseq == "" && len(got) > 0 || tc.cseq != "" && (len(got) != 1 || got[0] != tc.cseq) {
			t.Errorf("%s: CSeq %v, want %s", tc.name, got, tc.cseq)
		}
		if tc.code == base.StatusNotImplemented {
			if p := res.Header["Public"]; len(p) != 1 || !strings.Contains(p[0], "DESCRIBE") {
				t.Errorf("%s: Public %v", tc.name, p)
			}
		}
	}
	// after a 501 the connection serves the next request
	c := dialRTSP(t, n)
	if res := c.do("FOO", "*"); res.StatusCode != base.StatusNotImplemented {
		t.Errorf("FOO: %s", statusLine(res))
	}
	if res := c.do("OPTIONS", "*"); res.StatusCode != 200 {
		t.Errorf("OPTIONS after FOO: %s", statusLine(res))
	}
	// a request with a body (SET_PARAMETER) is read whole
	if res := c.do("SET_PARAMETER", "*", "Content-Type", "text/parameters", "Content-Length", "0"); res.StatusCode != 200 {
		t.Errorf("SET_PARAMETER: %s", statusLine(res))
	}
}
