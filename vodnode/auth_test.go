package vodnode

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"vodcluster/proto/token"
)

func TestTokenChecks(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	base := "rtsp://" + n.RTSPAddr()
	good := mint(t, "s1", "sample-001", "node-1", "127.0.0.1", time.Minute)
	cases := []struct {
		name string
		url  string
		want int
	}{
		{"missing", base + "/vod/sample-001", 401},
		{"invalid", base + "/s/not.a.token/vod/sample-001", 401},
		{"tampered", base + "/s/" + good[:len(good)-4] + "AAAA/vod/sample-001", 401},
		{"expired", base + "/s/" + mint(t, "s2", "sample-001", "node-1", "", -token.ClockSkew-time.Second) + "/vod/sample-001", 401},
		{"other title", base + "/s/" + mint(t, "s3", "sample-002", "node-1", "", time.Minute) + "/vod/sample-001", 401},
		{"other node", base + "/s/" + mint(t, "s4", "sample-001", "node-2", "", time.Minute) + "/vod/sample-001", 401},
		{"other client", base + "/s/" + mint(t, "s5", "sample-001", "node-1", "10.9.9.9", time.Minute) + "/vod/sample-001", 401},
		{"unknown title", base + "/s/" + mint(t, "s6", "nope-999", "node-1", "", time.Minute) + "/vod/nope-999", 404},
		{"bad path", base + "/s/" + good + "/films/sample-001", 404},
		{"path form", base + "/s/" + good + "/vod/sample-001", 200},
		{"query form", base + "/vod/sample-001?token=" + good, 200},
	}
	c := dialRTSP(t, n)
	for _, tc := range cases {
		res := c.do("DESCRIBE", tc.url)
		if int(res.StatusCode) != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, statusLine(res), tc.want)
			continue
		}
		if tc.want == 401 {
			if v := res.Header["WWW-Authenticate"]; len(v) == 0 || !strings.HasPrefix(v[0], `Bearer realm="vodcluster"`) {
				t.Errorf("%s: WWW-Authenticate %v", tc.name, v)
			}
		}
	}
	// SETUP without Session is checked the same way
	res := c.do("SETUP", base+"/s/"+mint(t, "s7", "sample-001", "node-2", "", time.Minute)+"/vod/sample-001/trackID=0",
		"Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 401 {
		t.Errorf("SETUP with another node's token: %s", statusLine(res))
	}
}

func TestSessionRequests(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	tok := mint(t, "sid-1", "sample-001", "node-1", "127.0.0.1", time.Minute)
	url := nodeURL(n, tok, "sample-001")
	c := dialRTSP(t, n)

	// a description the client does not accept: 406, and the token is
	// still good for the DESCRIBE that follows
	if res := c.do("DESCRIBE", url, "Accept", "text/html"); res.StatusCode != base.StatusNotAcceptable {
		t.Errorf("DESCRIBE accepting only text/html: %s", statusLine(res))
	}
	res := c.do("DESCRIBE", url, "Accept", "application/sdp")
	if res.StatusCode != 200 {
		t.Fatalf("DESCRIBE: %s", statusLine(res))
	}
	for _, want := range []string{"m=video 0 RTP/AVP 33", "a=rtpmap:33 MP2T/90000", "a=control:trackID=0", "a=range:npt=0-20."} {
		if !strings.Contains(string(res.Body), want) {
			t.Errorf("SDP lacks %q:\n%s", want, res.Body)
		}
	}
	if cb := res.Header["Content-Base"]; len(cb) != 1 || cb[0] != url+"/" {
		t.Errorf("Content-Base %v", cb)
	}
	// transports: unsupported list, then a list with an unknown entry first
	res = c.do("SETUP", url+"/trackID=0", "Transport", "RTP/SAVP;unicast;client_port=5000-5001,RTP/AVP;multicast")
	if res.StatusCode != base.StatusUnsupportedTransport {
		t.Errorf("unsupported transports: %s", statusLine(res))
	}
	res = c.do("SETUP", url+"/trackID=0", "Transport", "X-FOO/BAR;unicast, RTP/AVP/TCP;unicast;interleaved=4-5")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	if tr := res.Header["Transport"]; len(tr) != 1 || !strings.Contains(tr[0], "interleaved=4-5") {
		t.Errorf("Transport %v", tr)
	}
	if v := res.Header["Session"]; len(v) != 1 || !strings.HasSuffix(v[0], ";timeout=60") {
		t.Errorf("Session %v", v)
	}
	id := sessionID(res)

	other := mint(t, "sid-2", "sample-001", "node-1", "", time.Minute)
	for _, tc := range []struct {
		name string
		res  *base.Response
		want base.StatusCode
	}{
		{"no session", c.do("PLAY", url+"/"), base.StatusSessionNotFound},
		{"unknown session", c.do("PLAY", url+"/", "Session", "deadbeef"), base.StatusSessionNotFound},
		{"token of another session", c.do("PLAY", nodeURL(n, other, "sample-001")+"/", "Session", id), base.StatusUnauthorized},
		{"no token", c.do("PLAY", "rtsp://"+n.RTSPAddr()+"/vod/sample-001/", "Session", id), base.StatusUnauthorized},
		{"range past end", c.do("PLAY", url+"/", "Session", id, "Range", "npt=30-"), base.StatusInvalidRange},
		{"range ending before it starts", c.do("PLAY", url+"/", "Session", id, "Range", "npt=5-3"), base.StatusInvalidRange},
		{"bad range", c.do("PLAY", url+"/", "Session", id, "Range", "npt=abc-"), base.StatusInvalidRange},
		// Go's float parser takes these; a time past int64 nanoseconds
		// overflowed into "now" and played on (200).
		{"infinite range", c.do("PLAY", url+"/", "Session", id, "Range", "npt=inf-"), base.StatusInvalidRange},
		{"nan range", c.do("PLAY", url+"/", "Session", id, "Range", "npt=nan-"), base.StatusInvalidRange},
		{"exponent range", c.do("PLAY", url+"/", "Session", id, "Range", "npt=1e3-"), base.StatusInvalidRange},
		{"huge range", c.do("PLAY", url+"/", "Session", id, "Range", "npt=99999999999999999999-"), base.StatusInvalidRange},
		{"huge range end", c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-99999999999999999999"), base.StatusInvalidRange},
		{"hh:mm:ss range", c.do("PLAY", url+"/", "Session", id, "Range", "npt=0:00:02.5-"), base.StatusOK},
		{"range with a time parameter", c.do("PLAY", url+"/", "Session", id, "Range", "npt=2.0-;time=19970123T143720Z"), base.StatusOK},
		{"second setup", c.do("SETUP", url+"/trackID=0", "Session", id, "Transport", "RTP/AVP/TCP;unicast"), base.StatusMethodNotValidInThisState},
		{"record", c.do("RECORD", url+"/", "Session", id), base.StatusMethodNotAllowed},
		{"keepalive", c.do("GET_PARAMETER", url+"/", "Session", id), base.StatusOK},
		{"set parameter", c.do("SET_PARAMETER", url+"/", "Session", id), base.StatusOK},
		{"options", c.do("OPTIONS", "*"), base.StatusOK},
		{"keepalive at *", c.do("GET_PARAMETER", "*", "Session", id), base.StatusOK},
		{"keepalive at * of an unknown session", c.do("GET_PARAMETER", "*", "Session", "deadbeef"), base.StatusSessionNotFound},
		{"keepalive with the token of another session", c.do("GET_PARAMETER", nodeURL(n, other, "sample-001")+"/", "Session", id), base.StatusUnauthorized},
		{"options of an unknown session", c.do("OPTIONS", "*", "Session", "deadbeef"), base.StatusSessionNotFound},
		{"options of the session", c.do("OPTIONS", "*", "Session", id), base.StatusOK},
		{"clock range", c.do("PLAY", url+"/", "Session", id, "Range", "clock=20261130T150000Z-"), base.StatusNotImplemented},
		{"unknown range format", c.do("PLAY", url+"/", "Session", id, "Range", "frames=10-"), base.StatusNotImplemented},
		{"range without its start", c.do("PLAY", url+"/", "Session", id, "Range", "npt=-15"), base.StatusOK},
		{"seek to 8 s", c.do("PLAY", url+"/", "Session", id, "Range", "npt=8-"), base.StatusOK},
		// was 200 "npt=8.000-3.000", the play held where it stood
		{"range without its start ending before where the play stands", c.do("PLAY", url+"/", "Session", id, "Range", "npt=-3"), base.StatusInvalidRange},
		{"smpte-25 range", c.do("PLAY", url+"/", "Session", id, "Range", "smpte-25=00:00:05:12-"), base.StatusOK},
		{"smpte frame past the rate", c.do("PLAY", url+"/", "Session", id, "Range", "smpte=00:00:01:99-"), base.StatusInvalidRange},
		{"empty range", c.do("PLAY", url+"/", "Session", id, "Range", ""), base.StatusInvalidRange},
		{"reverse range with a negative Scale", c.do("PLAY", url+"/", "Session", id, "Range", "npt=10-5", "Scale", "-2"), base.StatusOK},
		{"pause", c.do("PAUSE", url+"/", "Session", id), base.StatusOK},
	} {
		if tc.res.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, statusLine(tc.res), tc.want)
		}
	}
	res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-")
	if res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	if ri := res.Header["RTP-Info"]; len(ri) != 1 || !strings.Contains(ri[0], "seq=") || !strings.Contains(ri[0], "rtptime=") {
		t.Errorf("RTP-Info %v", ri)
	}
	if _, _, err := c.frame(); err != nil {
		t.Fatalf("no media after PLAY: %v", err)
	}
	res = c.do("TEARDOWN", url+"/", "Session", id)
	if res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 2*time.Second, "session gone", func() bool { return n.Stats().Sessions == 0 })
	// the token cannot be used again, on this connection or another
	c2 := dialRTSP(t, n)
	if res := c2.do("DESCRIBE", url); res.StatusCode != 401 {
		t.Errorf("DESCRIBE with a used token: %s", statusLine(res))
	}
	if res := c2.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 401 {
		t.Errorf("SETUP with a used token: %s", statusLine(res))
	}
	if res := c2.do("PLAY", url+"/", "Session", id); res.StatusCode != 454 {
		t.Errorf("PLAY of an ended session: %s", statusLine(res))
	}
}

func TestMalformedRequest(t *testing.T) {
	n := startNode(t, "")
	c := dialRTSP(t, n)
	if res := c.do("DESCRIBE", "rtsp://"+n.RTSPAddr()+"/vod/x y"); res.StatusCode != 400 {
		t.Errorf("bad request line: %s", statusLine(res))
	}
	c = dialRTSP(t, n)
	c.c.Write([]byte("OPTIONS * RTSP/1.0\r\n\r\n"))
	if res := c.readResponse(); res.StatusCode != 400 {
		t.Errorf("no CSeq: %s", statusLine(res))
	}
}

// GET_PARAMETER with a body asks for parameters: the session's position
// and the title's duration are answered in text/parameters; unknown ones
// are left out (200: boxes use such requests as keepalives).
func TestGetParameterPosition(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "params", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	waitComplete(t, n, "sample-001") // the position is known from the whole title's clock
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=10-"); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	if res := c.do("PAUSE", url+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("PAUSE: %s", statusLine(res))
	}
	res = c.doBody("GET_PARAMETER", url+"/", "position\r\nduration\r\nvolume\r\n", "Session", id, "Content-Type", "text/parameters")
	body := string(res.Body)
	if res.StatusCode != 200 || !strings.Contains(body, "duration: ") || strings.Contains(body, "volume") {
		t.Fatalf("GET_PARAMETER: %s %q", statusLine(res), body)
	}
	var pos float64
	for _, line := range strings.Split(body, "\r\n") {
		if v, ok := strings.CutPrefix(line, "position: "); ok {
			pos, _ = strconv.ParseFloat(v, 64)
		}
	}
	if pos < 8 || pos > 12 {
		t.Fatalf("position %v after a seek to 10 s and a pause: %q", pos, body)
	}
	if res := c.do("GET_PARAMETER", url+"/", "Session", id); res.StatusCode != 200 || len(res.Body) != 0 {
		t.Fatalf("keepalive without a body: %s %q", statusLine(res), res.Body)
	}

	// Elementary-stream mode answers it too, playing and paused (it
	// answered the duration alone).
	es := esURL(n, mint(t, "params-es", "sample-001", "node-1", "", time.Minute), "sample-001")
	ce := dialRTSP(t, n)
	res = ce.do("SETUP", es+"/trackID=1", "Transport", "RTP/AVP;unicast;client_port=9710-9711")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP /es: %s", statusLine(res))
	}
	eid := sessionID(res)
	position := func(when string) float64 {
		res := ce.doBody("GET_PARAMETER", es+"/", "position\r\n", "Session", eid, "Content-Type", "text/parameters")
		v, ok := strings.CutPrefix(strings.TrimSpace(string(res.Body)), "position: ")
		p, err := strconv.ParseFloat(v, 64)
		if res.StatusCode != 200 || !ok || err != nil {
			t.Fatalf("GET_PARAMETER position of /es %s: %s %q", when, statusLine(res), res.Body)
		}
		return p
	}
	if res := ce.do("PLAY", es+"/", "Session", eid, "Range", "npt=10-"); res.StatusCode != 200 {
		t.Fatalf("PLAY /es: %s", statusLine(res))
	}
	if p := position("playing"); p < 9 || p > 12 {
		t.Errorf("/es position %v while playing from 10 s", p)
	}
	if res := ce.do("PAUSE", es+"/", "Session", eid); res.StatusCode != 200 {
		t.Fatalf("PAUSE /es: %s", statusLine(res))
	}
	if p := position("paused"); p < 9 || p > 14 {
		t.Errorf("/es position %v paused after playing from 10 s", p)
	}
}

// TestTokenBoundToItsProtocol: a token the manager issued behind one front
// door starts a session only over that protocol (an RTSP one over RTSPS
// too): an HTTP viewer's token over RTSP was played and recorded as http,
// and an RTSPS viewer's would have played on the plain port in clear.
func TestTokenBoundToItsProtocol(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), withHTTP)
	s, err := token.NewSigner(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	tok := func(sid, proto string) string {
		v, err := s.Sign(token.Claims{Session: sid, Title: "sample-001", Node: "node-1", Proto: proto}, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	c := dialRTSP(t, n)
	for _, tc := range []struct {
		name, proto string
		want        base.StatusCode
	}{
		{"RTSP token over RTSP", "rtsp", 200},
		{"older manager's token (no protocol)", "", 200},
		{"HTTP token over RTSP", "http", 401},
		{"RTSPS token over plain RTSP", "rtsps", 401},
	} {
		if res := c.do("DESCRIBE", nodeURL(n, tok("p-"+tc.proto+"-rtsp", tc.proto), "sample-001")); res.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, statusLine(res), tc.want)
		}
	}
	for _, tc := range []struct {
		name, proto string
		want        int
	}{
		{"HTTP token over HTTP", "http", 200},
		{"RTSP token over HTTP", "rtsp", 401},
	} {
		if res, _ := get(t, httpURL(n, tok("p-"+tc.proto+"-http", tc.proto), "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode/100 != tc.want/100 {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
	}
}
