package vodnode

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// testClient is a scripted RTSP client: raw requests, parsed responses and
// interleaved frames, so tests can check every status and header.
type testClient struct {
	t    testing.TB
	mu   sync.Mutex // serialises raw writes from tests that write by hand
	c    net.Conn
	br   *bufio.Reader
	cseq int
	// lastSeq is the sequence number of the last RTP packet read on an even
	// channel (also those skipped while waiting for a response)
	lastSeq uint16
	// frameBytes counts the bytes of the interleaved frames read ('$',
	// channel, length and payload; also those skipped while waiting for
	// a response)
	frameBytes int64
	// onFrame, when set, is given each interleaved frame read (also those
	// skipped while waiting for a response)
	onFrame func(ch int, b []byte)
}

func dialRTSP(t testing.TB, n *Node) *testClient {
	t.Helper()
	c, err := net.Dial("tcp", n.RTSPAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{t: t, c: c, br: bufio.NewReader(c)}
}

// do sends a request and returns its response, skipping interleaved frames.
func (tc *testClient) do(method, url string, hdr ...string) *base.Response {
	tc.t.Helper()
	return tc.doBody(method, url, "", hdr...)
}

// doBody is do with a request body (Content-Length set when there is one).
func (tc *testClient) doBody(method, url, body string, hdr ...string) *base.Response {
	tc.t.Helper()
	tc.cseq++
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s RTSP/1.0\r\nCSeq: %d\r\n", method, url, tc.cseq)
	if body != "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n" + body)
	tc.mu.Lock()
	_, err := io.WriteString(tc.c, b.String())
	tc.mu.Unlock()
	if err != nil {
		tc.t.Fatal(err)
	}
	return tc.readResponse()
}

func (tc *testClient) readResponse() *base.Response {
	tc.t.Helper()
	tc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		p, err := tc.br.Peek(1)
		if err != nil {
			tc.t.Fatalf("reading response: %v", err)
		}
		if p[0] == '$' {
			if _, _, err := tc.frame(); err != nil {
				tc.t.Fatal(err)
			}
			continue
		}
		var res base.Response
		if err := res.Unmarshal(tc.br); err != nil {
			tc.t.Fatalf("bad response: %v", err)
		}
		return &res
	}
}

// frame reads one interleaved frame.
func (tc *testClient) frame() (int, []byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(tc.br, h[:]); err != nil {
		return 0, nil, err
	}
	if h[0] != '$' {
		return 0, nil, fmt.Errorf("not a frame: %q", h[0])
	}
	b := make([]byte, int(h[2])<<8|int(h[3]))
	_, err := io.ReadFull(tc.br, b)
	if err == nil {
		tc.frameBytes += int64(len(h) + len(b))
	}
	if err == nil && h[1]%2 == 0 && len(b) >= 4 {
		tc.lastSeq = uint16(b[2])<<8 | uint16(b[3])
	}
	if err == nil && tc.onFrame != nil {
		tc.onFrame(int(h[1]), b)
	}
	return int(h[1]), b, err
}

// session returns the session id of a response.
func sessionID(res *base.Response) string {
	v := res.Header["Session"]
	if len(v) == 0 {
		return ""
	}
	id, _, _ := strings.Cut(v[0], ";")
	return id
}

// play sets up url over TCP and plays it; it returns the session id.
func (tc *testClient) play(url string) string {
	tc.t.Helper()
	res := tc.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		tc.t.Fatalf("SETUP: %d %s", res.StatusCode, res.Body)
	}
	id := sessionID(res)
	res = tc.do("PLAY", url+"/", "Session", id, "Range", "npt=0.000-")
	if res.StatusCode != 200 {
		tc.t.Fatalf("PLAY: %d %s", res.StatusCode, res.Body)
	}
	return id
}

// playES sets up the two tracks of the elementary-stream url over TCP
// (video on interleaved channels 0-1, audio on 2-3) and plays them from
// the start; it returns the session id. Any answer but 200 fails the test.
func (tc *testClient) playES(url string) string {
	tc.t.Helper()
	res := tc.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	id := sessionID(res)
	if res.StatusCode != 200 {
		tc.t.Fatalf("SETUP video: %s", statusLine(res))
	}
	if res := tc.do("SETUP", url+"/trackID=2", "Transport", "RTP/AVP/TCP;unicast;interleaved=2-3", "Session", id); res.StatusCode != 200 {
		tc.t.Fatalf("SETUP audio: %s", statusLine(res))
	}
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt=0-"); res.StatusCode != 200 {
		tc.t.Fatalf("PLAY: %s", statusLine(res))
	}
	return id
}

func statusLine(res *base.Response) string {
	return strconv.Itoa(int(res.StatusCode)) + " " + strings.TrimSpace(string(res.Body))
}
