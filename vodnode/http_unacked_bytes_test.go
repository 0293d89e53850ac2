package vodnode

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/proto/connlimit"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestHTTPBytesAreWhatTheViewerTook: an HTTP viewer that stops reading
// a progressive download is counted (its session's ENDED, and its load
// reports' bytes) the bytes it took, read or held in its receive buffer,
// not also those the node's socket still held unacknowledged, whether it
// then closes its connection or stays frozen until its session ends
// idle. (It was counted all the node had written into its socket: on a
// short title the whole title.) One that reads on, slowly, after the node
// closed its connection in good order (Connection: close) is counted
// every byte: its socket delivers them after.
func TestHTTPBytesAreWhatTheViewerTook(t *testing.T) {
	for _, then := range []string{"closes", "frozen", "reads on"} {
		t.Run(then, func(t *testing.T) {
			t.Parallel()
			stoppedViewerCounted(t, then)
		})
	}
}

// stoppedViewerCounted plays a short title over HTTP to a viewer that
// reads 20 kB of it and stops reading until the node has written a few
// hundred kB to it, then, as then says, closes its connection, stays
// frozen, or reads on to the end once the node closed the connection;
// and checks its session's ENDED bytes: between what it read and that
// plus its receive buffer and the node's send chunk, or, read on, the
// whole title.
func stoppedViewerCounted(t *testing.T, then string) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.ManagerAddr = time.Second, time.Second, maddr
	})
	sid := "h-stopped-" + strings.ReplaceAll(then, " ", "-")
	const rcvbuf = 8 << 10 // bytes asked of the viewer's receive buffer
	raw := dialRcvbuf(t, n.HTTPAddr(), rcvbuf)
	cc := &countingConn{Conn: raw}
	tok := mint(t, sid, "short-001", "node-1", "", time.Minute)
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	closing := "" // a connection kept alive: the frozen viewer's stays open to its session's end
	if then == "reads on" {
		closing = "Connection: close\r\n"
	}
	fmt.Fprintf(raw, "GET /s/%s/vod/short-001.ts HTTP/1.1\r\nHost: %s\r\n%s\r\n", tok, n.HTTPAddr(), closing)
	res, err := http.ReadResponse(bufio.NewReader(cc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", res.Status)
	}
	if _, err := io.CopyN(io.Discard, res.Body, 20000); err != nil {
		t.Fatalf("body: %v", err)
	}
	// Stopped from now on: the node writes the title into its socket
	// until its send buffer is full or the title is all in it.
	consumed := cc.n.Load() // with the header, and what bufio read ahead
	counted := func() int64 {
		n.mu.Lock()
		defer n.mu.Unlock()
		if hs := n.httpSessions[sid]; hs != nil {
			return hs.bytes.Load()
		}
		return -1
	}
	const written = 256 << 10
	waitFor(t, 10*time.Second, "the node's writes into the socket", func() bool { return counted() >= written })
	switch then {
	case "closes":
		raw.Close()
	case "reads on":
		// The title all in the sockets, the node closes its side (after
		// net/http's half a second for the client to read on).
		waitFor(t, 10*time.Second, "the node's close", func() bool { return n.connLimit.Open(connlimit.AddrKey(netip.MustParseAddr("127.0.0.1"))) == 0 })
		raw.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			t.Fatalf("the rest of the body: %v", err)
		}
	}
	waitFor(t, 30*time.Second, "ENDED", func() bool { return m.event(sid, pb.SessionEvent_KIND_ENDED) != nil })
	e := m.event(sid, pb.SessionEvent_KIND_ENDED)
	if then == "reads on" {
		if size := int64(len(o.titles["short-001"])); e.GetBytesSent() != size {
			t.Fatalf("ENDED %q, %d bytes: want the whole title read, %d", e.GetReason(), e.GetBytesSent(), size)
		}
		return
	}
	held := rcvbuf * 4 // the viewer's receive buffer as the kernel may size it (twice what was asked, with its overhead)
	if sc, err := raw.(*net.TCPConn).SyscallConn(); err == nil && then == "frozen" {
		sc.Control(func(fd uintptr) { held, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	}
	const margin = sendChunk + 8<<10 // counted before sendfile sends it; net/http's buffer
	if b := e.GetBytesSent(); b < 20000 || b > consumed+int64(held)+margin {
		t.Fatalf("ENDED %q, %d bytes: want the bytes the viewer took: %d read, at most %d more held in its receive buffer (and %d in the node's buffers); at least %d were written into the node's socket",
			e.GetReason(), b, consumed, held, margin, written)
	}
}

// TestHTTPBytesOfAFailedFillDelivered: a viewer reading a progressive
// download at its own pace whose title's fill fails mid-response (the
// origin cut) is counted every byte it then reads: the node closes the
// connection in good order after the fill's last byte, and its socket
// delivers what it holds after; the fill's failure is not the
// connection's, and nothing is taken back from the count.
func TestHTTPBytesOfAFailedFillDelivered(t *testing.T) {
	o := newFakeOrigin(t)
	data := o.titles["sample-005"]
	o.failAt.Store(int64(len(data)/2) / 188 * 188)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.ManagerAddr, n.FillRetryFor = maddr, 300*time.Millisecond
	})
	const sid = "h-failed-fill"
	raw := dialRcvbuf(t, n.HTTPAddr(), 8<<10)
	tok := mint(t, sid, "sample-005", "node-1", "", time.Minute)
	raw.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(raw, "GET /s/%s/vod/sample-005.ts HTTP/1.1\r\nHost: %s\r\n\r\n", tok, n.HTTPAddr())
	res, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", res, err)
	}
	// Not reading while the fill fails: the node's socket holds bytes
	// when the send's source fails.
	waitFor(t, 10*time.Second, "the fill to fail", func() bool { return n.store.FillsFailed()["origin"] == 1 })
	got, _ := io.Copy(io.Discard, res.Body) // to the node's close
	n.mu.Lock()
	hs := n.httpSessions[sid]
	n.mu.Unlock()
	if hs == nil {
		t.Fatal("no session")
	}
	n.endHTTPSessionIf(hs, "test", func() bool { return true })
	waitFor(t, 10*time.Second, "ENDED", func() bool { return m.event(sid, pb.SessionEvent_KIND_ENDED) != nil })
	if b := m.event(sid, pb.SessionEvent_KIND_ENDED).GetBytesSent(); got == 0 || b != got {
		t.Fatalf("ENDED %d bytes, want the %d the viewer read", b, got)
	}
}
