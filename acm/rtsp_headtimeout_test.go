package acm

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/rtspwire/rtspwiretest"
)

// TestRTSPFrontDoorHeadTimeout: a request whose first bytes came but not
// the rest within rtspHeadTimeout, the client silent after its CSeq line
// or sending the rest a byte every 100 ms, is answered 408 with its CSeq
// and Connection: close, and the connection closed (it was kept for the
// idle timeout, 60 s, and closed without a word); another client's
// connection is not touched. A connection idle for longer than that
// before its request is not: the request is answered.
func TestRTSPFrontDoorHeadTimeout(t *testing.T) {
	was := rtspHeadTimeout
	t.Cleanup(func() { rtspHeadTimeout = was }) // after the manager's own cleanup
	rtspHeadTimeout = 300 * time.Millisecond
	e := newManager(t, "", nil)
	addr := e.m.RTSPAddr()
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc, bufio.NewReader(nc)
	}
	options := func(nc net.Conn, br *bufio.Reader, cseq string) *base.Response {
		t.Helper()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(nc, "OPTIONS * RTSP/1.0\r\nCSeq: "+cseq+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		var res base.Response
		if err := res.Unmarshal(br); err != nil {
			t.Fatalf("OPTIONS: %v", err)
		}
		return &res
	}
	other, otherBR := dial()
	if res := options(other, otherBR, "1"); res.StatusCode != 200 {
		t.Fatalf("OPTIONS: %d %s", res.StatusCode, res.StatusMessage)
	}
	head := "OPTIONS rtsp://" + addr + "/vod/t1 RTSP/1.0\r\nCSeq: 1\r\n"
	for _, trickle := range []bool{false, true} {
		rtspwiretest.CheckHeadTimeout(t, addr, head, trickle, rtspHeadTimeout)
	}
	if res := options(other, otherBR, "2"); res.StatusCode != 200 {
		t.Fatalf("OPTIONS on another connection: %d %s", res.StatusCode, res.StatusMessage)
	}

	// Idle before its request, for three head timeouts: still served.
	idle, idleBR := dial()
	time.Sleep(3 * rtspHeadTimeout) // the idleness under test, not a wait for an event
	for _, cseq := range []string{"1", "2"} {
		if res := options(idle, idleBR, cseq); res.StatusCode != 200 {
			t.Fatalf("OPTIONS after %v idle: %d %s", 3*rtspHeadTimeout, res.StatusCode, res.StatusMessage)
		}
	}
}
