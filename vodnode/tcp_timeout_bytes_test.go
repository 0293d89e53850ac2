package vodnode

import (
	"bufio"
	"bytes"
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
// stays, nothing acknowledges what the node sends) is counted the bytes
// its side took (read, or held in its receive buffer), not also those
// the node still held for it unsent or unacknowledged, whether its
// session times out (no keepalive) or its stream falls too far behind
// first (slow-client). (It was counted everything the node wrote into
// its socket, and for a slow client what it queued for it too: what the
// box received plus the node's whole send queue.)
func TestTCPTimeoutCountsBytesDelivered(t *testing.T) {
	for _, c := range []struct {
		reason  string
		timeout time.Duration // the node's session timeout
	}{{"timeout", 2 * time.Second}, {"slow-client", time.Minute}} {
		t.Run(c.reason, func(t *testing.T) {
			t.Parallel()
			frozenPlayerCounted(t, c.reason, c.timeout)
		})
	}
}

// frozenPlayerCounted plays a title over TCP to a player that stops
// reading after 20 kB and checks its session's ENDED: reason, and bytes
// between what it read and that plus its receive buffer.
func frozenPlayerCounted(t *testing.T, reason string, timeout time.Duration) {
	o := newFakeOrigin(t)
	// two minutes of one title joined six times: longer than what the
	// node's queue and socket take, so that a frozen player holds the
	// stream back before its end
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 6)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.SessionTimeout, n.ManagerAddr = timeout, maddr
		n.maxLag, n.rtspQueue, n.rtspSendBuffer = 500*time.Millisecond, 64<<10, 64<<10
	})
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
	url := nodeURL(n, mint(t, "box-frozen", "long-001", "node-1", "", time.Minute), "long-001")
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
	waitFor(t, 90*time.Second, "ENDED", func() bool { return m.event("box-frozen", pb.SessionEvent_KIND_ENDED) != nil })
	e := m.event("box-frozen", pb.SessionEvent_KIND_ENDED)
	tc := raw.(*net.TCPConn)
	sc, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	held := 0 // the player's receive buffer as the kernel sized it (twice what was asked, with its overhead)
	sc.Control(func(fd uintptr) { held, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
	if e.GetReason() != reason || e.GetBytesSent() < consumed*9/10 || e.GetBytesSent() > consumed+int64(held) {
		t.Fatalf("ENDED reason %q, %d bytes: want %s and the bytes the player took: %d read, at most %d more held in its receive buffer",
			e.GetReason(), e.GetBytesSent(), reason, consumed, held)
	}
}
