package vodnode

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// TestTimedOutSessionSparesARequestInFlight: when the janitor ends the
// last session of a connection whose client is in the middle of sending
// its next request (a new SETUP arriving just then, its first bytes in),
// the connection is not cut: the request is answered, and the connection,
// idle then without a session, closes. (A connection idle between
// requests as its last session times out closes at once:
// TestTimedOutSessionClosesItsConnection.) (The janitor set the read
// deadline to now whatever the reader was doing, and the request was cut
// with the connection.)
func TestTimedOutSessionSparesARequestInFlight(t *testing.T) {
	t.Parallel() // a session timeout and more of real time
	// st leaves a loaded machine time: the request's first bytes go
	// out at 0.6 st, before the session times out (st, and up to the
	// janitor's period, 1 s, more), and its last bytes after that but
	// before the connection's read deadline (1.6 st); once answered, the
	// connection closes at once, within st/2, not after st more.
	const st = 6 * time.Second
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) { n.SessionTimeout = st })
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "in-flight", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	// Past the end: no media, and the session stays, silent, until it
	// times out (ffmpeg seeking past the end).
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=99-"); res.StatusCode != 457 {
		t.Fatalf("PLAY past the end: %s, want 457", statusLine(res))
	}
	played := time.Now()
	// The client's next request comes as its session times out. First
	// a request naming no live session (454: it keeps nothing alive)
	// renews the connection's read deadline past the session's timeout,
	// so that only the janitor could close the connection meanwhile.
	waitFor(t, 2*st, "0.6 of the session timeout to pass", func() bool { return time.Since(played) > st*6/10 })
	if res := c.do("OPTIONS", url+"/", "Session", "nosuch"); res.StatusCode != 454 {
		t.Fatalf("OPTIONS of no session: %s, want 454", statusLine(res))
	}
	c.cseq++
	head := fmt.Sprintf("OPTIONS %s/ RTSP/1.0\r\nCSeq: %d\r\n", url, c.cseq)
	if _, err := io.WriteString(c.c, head); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*st, "the session to time out", func() bool { return n.lookupSession(id) == nil })
	if _, err := io.WriteString(c.c, "\r\n"); err != nil {
		t.Fatalf("the rest of the request: %v", err)
	}
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard: a cut connection reads EOF at once
	if _, err := c.br.Peek(1); err != nil {
		t.Fatalf("the request in flight as the session timed out: %v, want its answer", err)
	}
	if res := c.readResponse(); res.StatusCode != 200 || res.Header["CSeq"][0] != fmt.Sprint(c.cseq) {
		t.Fatalf("the request in flight: %s, CSeq %v", statusLine(res), res.Header["CSeq"])
	}
	// Answered, and idle without a session: closed then, not kept a
	// session timeout more.
	c.c.SetReadDeadline(time.Now().Add(st / 2))
	if _, err := c.br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the idle connection without a session: %v, want it closed", err)
	}
}
