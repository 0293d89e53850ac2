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
