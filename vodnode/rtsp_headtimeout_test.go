package vodnode

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
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
		nc, err := net.Dial("tcp", n.RTSPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		start := time.Now()
		if _, err := io.WriteString(nc, head); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		trickled := make(chan struct{})
		go func() {
			defer close(trickled)
			if !trickle {
				return
			}
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := io.WriteString(nc, "X"); err != nil {
						return
					}
				}
			}
		}()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second)) // well before the session timeout
		br := bufio.NewReader(nc)
		var res base.Response
		err = res.Unmarshal(br)
		close(stop)
		<-trickled
		if err != nil {
			t.Errorf("trickle %v: no answer within 5 s: %v, want 408", trickle, err)
			continue
		}
		if res.StatusCode != base.StatusRequestTimeout || strings.Join(res.Header["CSeq"], ",") != "1" || strings.Join(res.Header["Connection"], ",") != "close" {
			t.Errorf("trickle %v: %s CSeq %v Connection %v, want 408 with CSeq 1, Connection: close", trickle, statusLine(&res), res.Header["CSeq"], res.Header["Connection"])
		}
		if took := time.Since(start); took < rtspHeadTimeout {
			t.Errorf("trickle %v: 408 after %v, before the head timeout (%v)", trickle, took, rtspHeadTimeout)
		}
		if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("trickle %v: after the 408: %v, want the connection closed", trickle, err)
		}
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
