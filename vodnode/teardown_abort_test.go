package vodnode

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// goroutineWaitingIn reports whether a goroutine's stack holds frame,
// and each of more.
func goroutineWaitingIn(frame string, more ...string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, frame) && !slices.ContainsFunc(more, func(f string) bool { return !strings.Contains(g, f) }) {
			return true
		}
	}
	return false
}

// wireItem is what a client reads after its TEARDOWN: an interleaved
// frame, or a response.
type wireItem struct {
	channel int
	bye     bool // an RTCP frame carrying a BYE
	status  base.StatusCode
	err     error // the read failed: the last item
}

// readAll reads c's connection (frames and responses) until it fails,
// each item to the channel returned, closed at the end.
func (tc *testClient) readAll() <-chan wireItem {
	out := make(chan wireItem, 1<<16)
	go func() {
		defer close(out)
		for {
			p, err := tc.br.Peek(1)
			if err != nil {
				out <- wireItem{err: err}
				return
			}
			if p[0] == '$' {
				ch, b, err := tc.frame()
				if err != nil {
					out <- wireItem{err: err}
					return
				}
				out <- wireItem{channel: ch, bye: ch%2 == 1 && hasBye(b)}
				continue
			}
			var res base.Response
			if err := res.Unmarshal(tc.br); err != nil {
				out <- wireItem{err: err}
				return
			}
			out <- wireItem{channel: -1, status: res.StatusCode}
		}
	}()
	return out
}

// TestTeardownAnswerAfterAbortBye: a TEARDOWN sent over TCP as the node
// ends the session on the manager's order (its stream's Abort, whose BYE
// may go on a goroutine of its own) is answered only once nothing more of
// the session is to be written: the 454 (the session gone) came before
// the RTCP BYE, and the media of the play, which the client, done with
// the session, no longer reads. Nothing of the session follows the
// answer: an MP2T session playing, an elementary-stream session playing
// (its play's goroutine still under way as Abort returns) and one set up
// but never played.
func TestTeardownAnswerAfterAbortBye(t *testing.T) {
	for _, kind := range []string{"mp2t", "es", "es-unplayed"} {
		t.Run(kind, func(t *testing.T) { answerAfterAbortBye(t, kind, "TEARDOWN") })
	}
}

// TestAnswerAfterAbortBye: as TestTeardownAnswerAfterAbortBye for the
// other requests a client may send on the session's connection as the
// node aborts it (a PLAY, an OPTIONS or GET_PARAMETER keepalive): their
// 454 came before the session's RTCP BYE, which the client then took for
// a stray packet or never read; every answer on the connection waits for
// it.
func TestAnswerAfterAbortBye(t *testing.T) {
	for _, method := range []string{"PLAY", "OPTIONS", "GET_PARAMETER"} {
		for _, kind := range []string{"mp2t", "es"} {
			t.Run(method+"/"+kind, func(t *testing.T) { answerAfterAbortBye(t, kind, method) })
		}
	}
}

// answerAfterAbortBye sends method, naming the session, on the
// connection of a session of kind (mp2t, es, es-unplayed) over TCP as
// the node aborts it, and checks that the answer, 454, comes after the
// session's RTCP BYE per track, and nothing of the session after it.
func answerAfterAbortBye(t *testing.T, kind, method string) {
	entered, release := make(chan struct{}), make(chan struct{})
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
		n.abortHook = func() {
			close(entered)
			<-release
		}
	})
	sid := "teardown-abort-" + kind
	tok := mint(t, sid, "sample-001", "node-1", "", time.Minute)
	c := dialRTSP(t, n)
	var id, url string
	tracks := 2
	switch kind {
	case "mp2t":
		url = nodeURL(n, tok, "sample-001")
		id = c.play(url)
		tracks = 1
	default:
		url = esURL(n, tok, "sample-001")
		res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
		if res.StatusCode != 200 {
			t.Fatalf("SETUP video: %s", statusLine(res))
		}
		id = sessionID(res)
		if res := c.do("SETUP", url+"/trackID=2", "Transport", "RTP/AVP/TCP;unicast;interleaved=2-3", "Session", id); res.StatusCode != 200 {
			t.Fatalf("SETUP audio: %s", statusLine(res))
		}
		if kind == "es" {
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-"); res.StatusCode != 200 {
				t.Fatalf("PLAY: %s", statusLine(res))
			}
		}
	}
	if kind != "es-unplayed" {
		c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("first frame: %v", err)
		}
	}
	ended := make(chan bool, 1)
	go func() { ended <- n.endAdmission(sid, "ended by the manager (test)") }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the session was not aborted")
	}
	// The session has left the node; its stream not aborted yet.
	// The client's TEARDOWN comes, and is handled: answered, or
	// waiting for the session's writes.
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	wire := c.readAll()
	req := method + " " + url + "/ RTSP/1.0\r\nCSeq: 99\r\nSession: " + id + "\r\n\r\n"
	c.mu.Lock()
	_, err := c.c.Write([]byte(req))
	c.mu.Unlock()
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	var items []wireItem
	answered := func() bool {
		for {
			select {
			case it := <-wire:
				items = append(items, it)
				if it.status != 0 || it.err != nil {
					return true
				}
				continue
			default:
			}
			return false
		}
	}
	for end := time.Now().Add(10 * time.Second); !answered() && !goroutineWaitingIn("vodnode.(*rtspConn).awaitAborts("); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			close(release)
			t.Fatalf("the %s was not handled", method)
		}
	}
	close(release) // the stream's Abort
	if !<-ended {
		t.Fatal("no live session to end")
	}
	// Everything up to the answer, then what follows it: nothing
	// (what is left is read at once).
	answer := slices.IndexFunc(items, func(it wireItem) bool { return it.status != 0 })
	for answer < 0 {
		it, ok := <-wire
		if !ok || it.err != nil {
			t.Fatalf("no answer to the %s: %v", method, it.err)
		}
		if items = append(items, it); it.status != 0 {
			answer = len(items) - 1
		}
	}
	c.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	for it := range wire {
		if it.err == nil {
			items = append(items, it)
		} else if !errors.Is(it.err, os.ErrDeadlineExceeded) {
			t.Errorf("reading after the answer: %v", it.err)
		}
	}
	status, byes := items[answer].status, 0
	for _, it := range items[:answer] {
		if it.bye {
			byes++
		}
	}
	after := items[answer+1:]
	if status != base.StatusSessionNotFound {
		t.Errorf("%s answered %d, want 454", method, status)
	}
	if byes != tracks {
		t.Errorf("%d RTCP BYEs before the answer, want %d", byes, tracks)
	}
	for _, it := range after {
		t.Errorf("after the %s's answer: channel %d (BYE %v)", method, it.channel, it.bye)
	}
}
