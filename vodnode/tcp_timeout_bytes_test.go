package vodnode

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// countingConn counts the bytes read from its connection.
type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	k, err := c.Conn.Read(b)
	c.n.Add(int64(k))
	return k, err
}

// TestTCPTimeoutCountsBytesDelivered: a player over TCP that stops
// reading (frozen, or a set-top box whose power went: the connection
// stays, nothing acknowledges what the node sends) and whose session
// times out is counted the bytes its side took (read, or held in its
// receive buffer), not also those the node's socket still held unsent or
// unacknowledged. (It was counted everything the node wrote into its
// socket: what the box received plus the node's whole send queue.)
func TestTCPTimeoutCountsBytesDelivered(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = 2 * time.Second; n.ManagerAddr = maddr })
	const rcvbuf = 8 << 10 // bytes asked of the player's receive buffer
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := d.DialContext(ctx, "tcp", n.RTSPAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	cc := &countingConn{Conn: raw}
	c := &testClient{t: t, c: raw, br: bufio.NewReader(cc)}
	url := nodeURL(n, mint(t, "box-frozen", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	if res = c.do("PLAY", url+"/", "Session", sessionID(res)); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for c.frameBytes < 20000 {
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("media: %v", err)
		}
	}
	// Frozen from now on: nothing read, no keepalive; the node's writes
	// fill both sides' buffers until the session times out.
	consumed := cc.n.Load()
	waitFor(t, 15*time.Second, "ENDED", func() bool { return m.event("box-frozen", pb.SessionEvent_KIND_ENDED) != nil })
	e := m.event("box-frozen", pb.SessionEvent_KIND_ENDED)
	tc := raw.(*net.TCPConn)
	sc, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	held := 0 // the player's receive buffer as the kernel sized it (twice what was asked, with its overhead)
	sc.Control(func(fd uintptr) { held, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	if e.GetReason() != "timeout" || e.GetBytesSent() < consumed*9/10 || e.GetBytesSent() > consumed+int64(held) {
		t.Fatalf("ENDED reason %q, %d bytes: want timeout and the bytes the player took: %d read, at most %d more held in its receive buffer",
			e.GetReason(), e.GetBytesSent(), consumed, held)
	}
}
