// Package rtspwiretest holds what the tests of the project's RTSP servers
// (the front door, the nodes) share.
package rtspwiretest

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

// CheckHeadTimeout sends head (a request's line and header lines with
// CSeq 1, not ended) to the RTSP server at addr over a new connection,
// then nothing or, with trickle, a byte every 100 ms, and checks that the
// server answers within 5 s 408 Request Timeout with CSeq 1 and
// Connection: close, no sooner than timeout (its request-head timeout),
// and closes the connection. Failures are reported with t.Errorf (a
// connection that cannot be made, t.Fatal).
func CheckHeadTimeout(t testing.TB, addr, head string, trickle bool, timeout time.Duration) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
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
	nc.SetReadDeadline(time.Now().Add(5 * time.Second)) // well before an idle or session timeout
	var res base.Response
	err = res.Unmarshal(br)
	close(stop)
	<-trickled
	if err != nil {
		t.Errorf("trickle %v: no answer within 5 s: %v, want 408", trickle, err)
		return
	}
	if res.StatusCode != base.StatusRequestTimeout || strings.Join(res.Header["CSeq"], ",") != "1" || strings.Join(res.Header["Connection"], ",") != "close" {
		t.Errorf("trickle %v: %d %q CSeq %v Connection %v, want 408 with CSeq 1, Connection: close", trickle, res.StatusCode, res.StatusMessage, res.Header["CSeq"], res.Header["Connection"])
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("trickle %v: 408 after %v, before the head timeout (%v)", trickle, took, timeout)
	}
	if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("trickle %v: after the 408: %v, want the connection closed", trickle, err)
	}
}
