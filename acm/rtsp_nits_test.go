package acm

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// rawFrontDoor writes req as is on a new TCP connection to the front
// door at addr and reads the response.
func rawFrontDoor(t *testing.T, addr, req string) *base.Response {
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

// At the front door a CSeq that is not 1*DIGIT (RFC 2326 §12.17) is 400
// saying so, not echoed (it was echoed in a 200); a SET_PARAMETER whose
// body names parameters is 451 Parameter Not Understood (it was 200),
// while one with an empty or blank body, a set-top box's keepalive,
// stays 200.
func TestRTSPFrontDoorCSeqAndSetParameter(t *testing.T) {
	e := newManager(t, "", nil)
	addr := e.m.RTSPAddr()
	for _, tc := range []struct {
		name, req string
		code      base.StatusCode
		cseq, msg string
	}{
		{"CSeq not a number", "OPTIONS * RTSP/1.0\r\nCSeq: abc\r\n\r\n", base.StatusBadRequest, "", "Bad Request (CSeq is not a number)"},
		{"CSeq negative", "OPTIONS * RTSP/1.0\r\nCSeq: -1\r\n\r\n", base.StatusBadRequest, "", "Bad Request (CSeq is not a number)"},
		{"CSeq a number with white space after", "OPTIONS * RTSP/1.0\r\nCSeq: 8 \t\r\n\r\n", base.StatusOK, "8", "OK"},
		{"CSeq a number", "OPTIONS * RTSP/1.0\r\nCSeq: 7\r\n\r\n", base.StatusOK, "7", "OK"},
		{"SET_PARAMETER naming a parameter", "SET_PARAMETER * RTSP/1.0\r\nCSeq: 2\r\nContent-Type: text/parameters\r\nContent-Length: 11\r\n\r\nvolume: 5\r\n",
			base.StatusParameterNotUnderstood, "2", "Parameter Not Understood (the front door sets no parameter)"},
		{"SET_PARAMETER empty", "SET_PARAMETER * RTSP/1.0\r\nCSeq: 3\r\n\r\n", base.StatusOK, "3", "OK"},
		{"SET_PARAMETER blank body", "SET_PARAMETER * RTSP/1.0\r\nCSeq: 4\r\nContent-Length: 2\r\n\r\n\r\n", base.StatusOK, "4", "OK"},
		{"GET_PARAMETER naming a parameter", "GET_PARAMETER * RTSP/1.0\r\nCSeq: 5\r\nContent-Length: 8\r\n\r\nvolume\r\n", base.StatusOK, "5", "OK"},
	} {
		res := rawFrontDoor(t, addr, tc.req)
		got := ""
		if v := res.Header["CSeq"]; len(v) == 1 {
			got = v[0]
		}
		if res.StatusCode != tc.code || got != tc.cseq || res.StatusMessage != tc.msg {
			t.Errorf("%s: %d %q CSeq %q, want %d %q CSeq %q", tc.name, res.StatusCode, res.StatusMessage, got, tc.code, tc.msg, tc.cseq)
		}
	}
}
