package vodnode

import (
	"io"
	"testing"
	"time"

	"vodcluster/proto/rtspwire/rtspwiretest"
)

// TestRTSPRequestHeadTimeout: a request whose first bytes came but not
// the rest within rtspHeadTimeout, the client silent after its CSeq line
// or sending the rest a byte every 100 ms, is answered 408 with its CSeq
// and Connection: close, and the connection closed (it was kept for the
// session timeout, 60 s, and closed without a word); another client's
// connection is not touched. A connection idle for longer than that
// before its request is not, also after a response it sent: the request
// is answered.
func TestRTSPRequestHeadTimeout(t *testing.T) {
	was := rtspHeadTimeout
	t.Cleanup(func() { rtspHeadTimeout = was }) // after the node's own cleanup
	rtspHeadTimeout = 300 * time.Millisecond
	n := startNode(t, "")
	other := dialRTSP(t, n)
	if res := other.do("OPTIONS", "*"); res.StatusCode != 200 {
		t.Fatalf("OPTIONS: %s", statusLine(res))
	}
	head := "OPTIONS rtsp://" + n.RTSPAddr() + "/ RTSP/1.0\r\nCSeq: 1\r\n"
	for _, trickle := range []bool{false, true} {
		rtspwiretest.CheckHeadTimeout(t, n.RTSPAddr(), head, trickle, rtspHeadTimeout)
	}
	if res := other.do("OPTIONS", "*"); res.StatusCode != 200 {
		t.Fatalf("OPTIONS on another connection: %s", statusLine(res))
	}

	// Idle before its request, for three head timeouts: still served.
	idle := dialRTSP(t, n)
	time.Sleep(3 * rtspHeadTimeout) // the idleness under test, not a wait for an event
	for range 2 {
		if res := idle.do("OPTIONS", "*"); res.StatusCode != 200 {
			t.Fatalf("OPTIONS after %v idle: %s", 3*rtspHeadTimeout, statusLine(res))
		}
	}
	// A response from the client, then silence: idle too (it waited
	// for its next message under the head timeout, and the connection
	// was closed).
	if _, err := io.WriteString(idle.c, "RTSP/1.0 200 OK\r\nCSeq: 7\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * rtspHeadTimeout) // the idleness under test
	if res := idle.do("OPTIONS", "*"); res.StatusCode != 200 {
		t.Fatalf("OPTIONS after a response and %v idle: %s", 3*rtspHeadTimeout, statusLine(res))
	}
}
