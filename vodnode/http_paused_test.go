package vodnode

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestHTTPViewerPausedByNotReading: an HTTP viewer that stops reading a
// progressive download (a player paused: its write stalls past the
// session timeout and its request ends) and asks again a second later
// reports paused_ms in its session's ENDED (the session record's
// paused_s): from the last bytes it took to its next request, at least
// from when its request was seen ended to when it asked again, at most
// from its first request to the answer of its next one (not the second
// between that request and a further one).
func TestHTTPViewerPausedByNotReading(t *testing.T) {
	o := newFakeOrigin(t)
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 6) // more than the sockets hold
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.ManagerAddr = time.Second, 4*time.Second, maddr
		n.httpSendBuffer = 16 << 10
	})
	const sid = "h-paused"
	tok := mint(t, sid, "long-001", "node-1", "", time.Minute)
	raw := dialRcvbuf(t, n.HTTPAddr(), 8<<10)
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	asked1 := time.Now() // the node's writes that went through, the last one's end included, come after
	fmt.Fprintf(raw, "GET /s/%s/vod/long-001.ts HTTP/1.1\r\nHost: %s\r\n\r\n", tok, n.HTTPAddr())
	res, err := http.ReadResponse(bufio.NewReader(raw), nil)
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
	hs := func() *httpSession {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.httpSessions[sid]
	}()
	if hs == nil {
		t.Fatal("no HTTP session")
	}
	waitFor(t, 15*time.Second, "the stalled request to end", func() bool { return hs.active.Load() == 0 })
	seenEnded := time.Now()
	time.Sleep(time.Second) // the pause measured, not a wait for an event
	get := func(rng string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/s/%s/vod/long-001.ts", n.HTTPAddr(), tok), nil)
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
	asked := time.Now()
	get("bytes=20000-29999")
	answered := time.Now()
	// A second between requests that went through is no pause (an HLS
	// player between segments).
	time.Sleep(time.Second)
	get("bytes=30000-39999")
	raw.Close()
	var e *pb.SessionEvent
	waitFor(t, 20*time.Second, "the session's ENDED (idle)", func() bool {
		e = m.event(sid, pb.SessionEvent_KIND_ENDED)
		return e != nil
	})
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
	o := newFakeOrigin(t)
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 6) // more than the sockets hold
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.ManagerAddr = 2*time.Second, 4*time.Second, maddr
		n.httpSendBuffer = 16 << 10
	})
	const sid = "h-abandoned"
	tok := mint(t, sid, "long-001", "node-1", "", time.Minute)
	raw := dialRcvbuf(t, n.HTTPAddr(), 8<<10)
	raw.SetDeadline(time.Now().Add(15 * time.Second))
	fmt.Fprintf(raw, "GET /s/%s/vod/long-001.ts HTTP/1.1\r\nHost: %s\r\n\r\n", tok, n.HTTPAddr())
	res, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", res.Status)
	}
	if _, err := io.CopyN(io.Discard, res.Body, 20000); err != nil {
		t.Fatalf("body: %v", err)
	}
	// Reads nothing more on this connection, and does not close it.
	hs := func() *httpSession {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.httpSessions[sid]
	}()
	if hs == nil {
		t.Fatal("no HTTP session")
	}
	get := func(rng string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s/s/%s/vod/long-001.ts", n.HTTPAddr(), tok), nil)
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
	get("bytes=20000-29999")
	if a := hs.active.Load(); a != 1 {
		t.Fatalf("%d requests in progress once the range was taken, want 1 (the abandoned one)", a)
	}
	waitFor(t, 15*time.Second, "the abandoned request to end", func() bool { return hs.active.Load() == 0 })
	get("bytes=30000-39999")
	raw.Close()
	var e *pb.SessionEvent
	waitFor(t, 20*time.Second, "the session's ENDED (idle)", func() bool {
		e = m.event(sid, pb.SessionEvent_KIND_ENDED)
		return e != nil
	})
	if p := e.GetPausedMs(); p != 0 {
		t.Errorf("ENDED paused_ms %d, want 0 (the request that stalled was not the viewer's last)", p)
	}
}
