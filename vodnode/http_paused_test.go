package vodnode

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// httpStall is an HTTP viewer's progressive download of long-001 that
// took 20000 bytes and reads no more (its connection left open): the
// node, its fake manager, the session, the viewer's token and its
// connection, and range takes a byte range in full on a new connection.
type httpStall struct {
	n   *Node
	m   *fakeManager
	hs  *httpSession
	tok string
	raw net.Conn
}

// stallHTTP starts a node with a small send buffer and session timeout
// timeout, and a download of session sid that stalls (httpStall); asked
// is when its request was sent.
func stallHTTP(t *testing.T, sid string, timeout time.Duration) (st httpStall, asked time.Time) {
	t.Helper()
	o := newFakeOrigin(t)
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 6) // more than the sockets hold
	st.m = newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, st.m) })
	st.n = startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.ManagerAddr = timeout, 4*time.Second, maddr
		n.httpSendBuffer = 16 << 10
	})
	st.tok = mint(t, sid, "long-001", "node-1", "", time.Minute)
	st.raw = dialRcvbuf(t, st.n.HTTPAddr(), 8<<10)
	st.raw.SetDeadline(time.Now().Add(15 * time.Second))
	asked = time.Now() // the node's writes that went through, the last one's end included, come after
	fmt.Fprintf(st.raw, "GET /s/%s/vod/long-001.ts HTTP/1.1\r\nHost: %s\r\n\r\n", st.tok, st.n.HTTPAddr())
	res, err := http.ReadResponse(bufio.NewReader(st.raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", res.Status)
	}
	if _, err := io.CopyN(io.Discard, res.Body, 20000); err != nil {
		t.Fatalf("body: %v", err)
	}
	// Reads nothing more on this connection (the node's last write that
	// went through may have ended before: into the sockets' buffers).
	st.hs = func() *httpSession {
		st.n.mu.Lock()
		defer st.n.mu.Unlock()
		return st.n.httpSessions[sid]
	}()
	if st.hs == nil {
		t.Fatal("no HTTP session")
	}
	return st, asked
}

// takeRange takes byte range rng ("bytes=A-B") of the stalled viewer's
// title in full on a new connection (206).
func (st httpStall) takeRange(t *testing.T, rng string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/s/%s/vod/long-001.ts", st.n.HTTPAddr(), st.tok), nil)
	req.Header.Set("Range", rng)
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil || res.StatusCode != http.StatusPartialContent {
		t.Fatalf("range %s: %s, %v", rng, res.Status, err)
	}
}

// ended closes the viewer's connection and returns its session's ENDED
// (once idle).
func (st httpStall) ended(t *testing.T, sid string) *pb.SessionEvent {
	t.Helper()
	st.raw.Close()
	var e *pb.SessionEvent
	waitFor(t, 20*time.Second, "the session's ENDED (idle)", func() bool {
		e = st.m.event(sid, pb.SessionEvent_KIND_ENDED)
		return e != nil
	})
	return e
}

// TestHTTPViewerPausedByNotReading: an HTTP viewer that stops reading a
// progressive download (a player paused: its write stalls past the
// session timeout and its request ends) and asks again a second later
// reports paused_ms in its session's ENDED (the session record's
// paused_s): from the last bytes it took to its next request, at least
// from when its request was seen ended to when it asked again, at most
// from its first request to the answer of its next one (not the second
// between that request and a further one).
func TestHTTPViewerPausedByNotReading(t *testing.T) {
	const sid = "h-paused"
	st, asked1 := stallHTTP(t, sid, time.Second)
	waitFor(t, 15*time.Second, "the stalled request to end", func() bool { return st.hs.active.Load() == 0 })
	seenEnded := time.Now()
	time.Sleep(time.Second) // the pause measured, not a wait for an event
	asked := time.Now()
	st.takeRange(t, "bytes=20000-29999")
	answered := time.Now()
	// A second between requests that went through is no pause (an HLS
	// player between segments).
	time.Sleep(time.Second)
	st.takeRange(t, "bytes=30000-39999")
	e := st.ended(t, sid)
	least, most := asked.Sub(seenEnded), answered.Sub(asked1)
	if p := time.Duration(e.GetPausedMs()) * time.Millisecond; p < least-time.Millisecond || p > most {
		t.Errorf("ENDED paused_ms %d, want from %d to %d", e.GetPausedMs(), least.Milliseconds(), most.Milliseconds())
	}
}

// TestHTTPViewerNotPausedByAnAbandonedRequest: an HTTP viewer that leaves
// a progressive download unread without closing its connection (a
// player that moved on: a seek), takes a byte range on another
// connection in full, and asks again after the abandoned request's
// write stalled past the session timeout and ended is not paused: the
// request that stalled was not its last, so its stall is no sign the
// viewer took nothing (its ENDED's paused_ms is 0). (The pause was dated
// from the abandoned request's last bytes to the next request, counting
// the range taken and the gap after it.)
func TestHTTPViewerNotPausedByAnAbandonedRequest(t *testing.T) {
	const sid = "h-abandoned"
	st, _ := stallHTTP(t, sid, 2*time.Second)
	st.takeRange(t, "bytes=20000-29999")
	if a := st.hs.active.Load(); a != 1 {
		t.Fatalf("%d requests in progress once the range was taken, want 1 (the abandoned one)", a)
	}
	waitFor(t, 15*time.Second, "the abandoned request to end", func() bool { return st.hs.active.Load() == 0 })
	st.takeRange(t, "bytes=30000-39999")
	if p := st.ended(t, sid).GetPausedMs(); p != 0 {
		t.Errorf("ENDED paused_ms %d, want 0 (the request that stalled was not the viewer's last)", p)
	}
}
