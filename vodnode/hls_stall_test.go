package vodnode

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/cdp/tsindex"
	pb "vodcluster/proto/vodcluster/v1"
)

// An HLS player that stops reading in the middle of a segment, its
// connection left open, is cut as a progressive one is: the segment's
// write is given SessionTimeout to complete (as a download's chunk is),
// and the session then ends PauseTimeout after, its reservation given
// back. Segments had no write deadline: the request, sendfile waiting on
// a full socket for as long as the connection stayed open, kept the
// session in use and never ended it.
func TestHLSStalledReaderEnded(t *testing.T) {
	t.Parallel()
	o := newFakeOrigin(t)
	// A title whose segment 2 (11 MB: null packets after its keyframe)
	// is larger than what the loopback's socket buffers take in.
	title := o.titles["sample-001"]
	x, err := tsindex.BuildFrom(bytes.NewReader(title))
	if err != nil {
		t.Fatal(err)
	}
	at := x.Keyframes[x.KeyframeAt(9)].Offset
	null := append([]byte{0x47, 0x1f, 0xff, 0x10}, bytes.Repeat([]byte{0xff}, tsindex.PacketSize-4)...)
	o.titles["long-001"] = slices.Concat(title[:at], bytes.Repeat(null, 11<<20/tsindex.PacketSize), title[at:])
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout = time.Second, time.Second
		n.ManagerAddr = maddr
	})
	tok := mint(t, "hstall", "long-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "long-001/index.m3u8")); res.StatusCode != 200 {
		t.Fatalf("playlist: %d", res.StatusCode)
	}
	// Unpaced: the socket buffers fill at once (at 1.2 times the
	// bitrate, past the burst, they take minutes).
	n.mu.Lock()
	n.httpSessions["hstall"].pacing.lim.Store(nil)
	n.mu.Unlock()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	c, err := d.Dial("tcp", n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /s/%s/vod/long-001/seg-2.ts HTTP/1.1\r\nHost: node\r\n\r\n", tok)
	if _, err := io.ReadFull(c, make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	// Reads nothing more, keeps the connection open.
	waitFor(t, 20*time.Second, "the stalled HLS session to end", func() bool { return n.Stats().Sessions == 0 })
	waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event("hstall", pb.SessionEvent_KIND_ENDED) != nil })
	seen := time.Now()
	// As for a download (TestHTTPStalledReaderEnded): the end reported is
	// the last write that went through, 2 SessionTimeouts (2 s) before the
	// ENDED was seen, not the stalled request's end.
	e := m.event("hstall", pb.SessionEvent_KIND_ENDED)
	if at := time.UnixMilli(e.GetAtUnixMs()); e.GetReason() != "idle" || at.After(seen.Add(-1900*time.Millisecond)) {
		t.Errorf("ENDED %+v at %v, %v before it was seen: want reason idle, at the last write that went through (2 s before)", e, at, seen.Sub(at))
	}
}
