package vodnode

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// rawRTSP writes req as is on a new TCP connection to addr and reads the
// response.
func rawRTSP(t *testing.T, addr, req string) *base.Response {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	var res base.Response
	if err := res.Unmarshal(bufio.NewReader(nc)); err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	return &res
}

// A CSeq that is not 1*DIGIT (RFC 2326 §12.17) is 400 with the reason, not
// echoed (it was echoed in a 200); a SET_PARAMETER whose body names
// parameters is 451 Parameter Not Understood (it was 200: the node sets
// none), while one with an empty or blank body, a set-top box's
// keepalive, stays 200.
func TestRTSPCSeqAndSetParameter(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	addr := n.RTSPAddr()
	for _, tc := range []struct {
		name, req string
		code      base.StatusCode
		cseq      string
	}{
		{"CSeq not a number", "OPTIONS * RTSP/1.0\r\nCSeq: abc\r\n\r\n", base.StatusBadRequest, ""},
		{"CSeq negative", "OPTIONS * RTSP/1.0\r\nCSeq: -1\r\n\r\n", base.StatusBadRequest, ""},
		{"CSeq a number with white space after", "OPTIONS * RTSP/1.0\r\nCSeq: 8 \t\r\n\r\n", base.StatusOK, "8"},
		{"CSeq a number", "OPTIONS * RTSP/1.0\r\nCSeq: 7\r\n\r\n", base.StatusOK, "7"},
		{"SET_PARAMETER naming a parameter", "SET_PARAMETER * RTSP/1.0\r\nCSeq: 2\r\nContent-Type: text/parameters\r\nContent-Length: 11\r\n\r\nvolume: 5\r\n", base.StatusParameterNotUnderstood, "2"},
		{"SET_PARAMETER empty", "SET_PARAMETER * RTSP/1.0\r\nCSeq: 3\r\n\r\n", base.StatusOK, "3"},
		{"SET_PARAMETER blank body", "SET_PARAMETER * RTSP/1.0\r\nCSeq: 4\r\nContent-Length: 2\r\n\r\n\r\n", base.StatusOK, "4"},
		{"GET_PARAMETER naming a parameter", "GET_PARAMETER * RTSP/1.0\r\nCSeq: 5\r\nContent-Length: 8\r\n\r\nvolume\r\n", base.StatusOK, "5"},
	} {
		res := rawRTSP(t, addr, tc.req)
		got := ""
		if v := res.Header["CSeq"]; len(v) == 1 {
			got = v[0]
		}
		if res.StatusCode != tc.code || got != tc.cseq {
			t.Errorf("%s: %d %q CSeq %q, want %d CSeq %q", tc.name, res.StatusCode, res.StatusMessage, got, tc.code, tc.cseq)
		}
		if tc.code != base.StatusOK && len(res.Body) == 0 {
			t.Errorf("%s: %d without a body saying why", tc.name, res.StatusCode)
		}
	}
}

// Every SET_PARAMETER naming a session keeps it alive, whatever it is
// answered: a set-top box whose keepalive is a SET_PARAMETER with a body
// ("ping") gets 451 but must not see its session time out. The answer is
// the same at the session's URL and at a URL without a token ("*", the
// node's root, as set-top boxes send), where it was 200.
func TestSetParameterWithBodyKeepsSessionAlive(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "sp-body", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != base.StatusOK {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	s := n.lookupSession(id)
	if s == nil {
		t.Fatal("no session after SETUP")
	}
	root := "rtsp://" + n.RTSPAddr() + "/"
	for _, tc := range []struct {
		name, method, url, body string
		session                 bool
		code                    base.StatusCode
	}{
		{"at the session's URL", "SET_PARAMETER", url + "/", "ping\r\n", true, base.StatusParameterNotUnderstood},
		{"at *", "SET_PARAMETER", "*", "ping\r\n", true, base.StatusParameterNotUnderstood},
		{"at the node's root", "SET_PARAMETER", root, "keepalive: 1\r\n", true, base.StatusParameterNotUnderstood},
		{"at * without Session", "SET_PARAMETER", "*", "ping\r\n", false, base.StatusParameterNotUnderstood},
		{"at * with an empty body", "SET_PARAMETER", "*", "", true, base.StatusOK},
		{"GET_PARAMETER at * with a body", "GET_PARAMETER", "*", "ping\r\n", true, base.StatusOK},
	} {
		s.lastSeen.Store(1) // long silent: the request must refresh it
		var hdr []string
		if tc.session {
			hdr = []string{"Session", id}
		}
		res := c.doBody(tc.method, tc.url, tc.body, hdr...)
		if res.StatusCode != tc.code {
			t.Errorf("%s: %s, want %d", tc.name, statusLine(res), tc.code)
		}
		if s.lastSeen.Load() == 1 {
			t.Errorf("%s: session not kept alive", tc.name)
		}
	}
}
