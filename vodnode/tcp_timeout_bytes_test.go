package vodnode

import (
	"bufio"
	"bytes"
	"io"
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
// reading (frozen) and whose session times out (no keepalive), or one
// reading slower than the title's bitrate whose stream falls too far
// behind (slow-client), is counted the bytes its side took (read, or
// held in its receive buffer), not also those the node still held for
// it unsent or unacknowledged. (It was counted everything the node wrote
// into its socket, and for a slow client what it queued for it too: what
// the box received plus the node's whole send queue.)
func TestTCPTimeoutCountsBytesDelivered(t *testing.T) {
	for _, c := range []struct {
		reason  string
		timeout time.Duration // the node's session and pause timeouts
		slow    bool          // the player reads on, slowly; else it stops
	}{{"timeout", 2 * time.Second, false}, {"slow-client", time.Minute, true}} {
		t.Run(c.reason, func(t *testing.T) {
			t.Parallel()
			tcpPlayerCounted(t, c.reason, c.timeout, c.slow)
		})
	}
}

// tcpPlayerAt20k plays long-001 (a title of two minutes) over TCP from a
// node with a small send queue and socket buffer (set adjusts it before
// it starts) to a player, session sid, whose receive buffer is 8 kB, and
// reads its stream until 20 kB came. It returns the node, its manager,
// the player, the connection counting what the player read, and the
// title's URL and RTSP session.
func tcpPlayerAt20k(t *testing.T, sid string, set func(*Node)) (*Node, *fakeManager, *testClient, *countingConn, string, string) {
	o := newFakeOrigin(t)
	// two minutes of one title joined six times: longer than what the
	// node's queue and socket take, so that a player not reading holds
	// the stream back before its end
	o.titles["long-001"] = bytes.Repeat(o.titles["sample-001"], 6)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.rtspQueue, n.rtspSendBuffer = 64<<10, 64<<10
		set(n)
	})
	raw := dialRcvbuf(t, n.RTSPAddr(), 8<<10)
	cc := &countingConn{Conn: raw}
	c := &testClient{t: t, c: raw, br: bufio.NewReader(cc)}
	url := nodeURL(n, mint(t, sid, "long-001", "node-1", "", time.Minute), "long-001")
	sess := playTo20k(t, c, url)
	return n, m, c, cc, url, sess
}

// playTo20k sets up track 0 of url interleaved on c's connection, plays
// it and reads its media until 20 kB of frames came (the connection's
// read deadline 10 s on), and returns the RTSP session's id.
func playTo20k(t *testing.T, c *testClient, url string) string {
	t.Helper()
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	sess := sessionID(res)
	if res = c.do("PLAY", url+"/", "Session", sess); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for c.frameBytes < 20000 {
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("media: %v", err)
		}
	}
	return sess
}

// tcpPlayerCounted plays a title over TCP to a player that, after 20 kB,
// stops reading, or (slow) reads 2 kB every 100 ms, a fourth of the
// title's bitrate, and checks its session's ENDED: reason, and bytes
// between what it read and that plus its receive buffer.
func tcpPlayerCounted(t *testing.T, reason string, timeout time.Duration, slow bool) {
	_, m, c, cc, _, _ := tcpPlayerAt20k(t, "box-frozen", func(n *Node) {
		n.SessionTimeout, n.PauseTimeout, n.maxLag = timeout, timeout, time.Second
	})
	raw := c.c
	// From now on nothing is sent: no keepalive. The node's writes fill
	// both sides' buffers until the session times out, or the slow
	// player's stream falls behind.
	read := make(chan struct{})
	if slow {
		go func() {
			defer close(read)
			raw.SetReadDeadline(time.Time{})
			var b [2 << 10]byte
			for {
				if _, err := io.ReadFull(c.br, b[:]); err != nil {
					return // reset by the node
				}
				time.Sleep(100 * time.Millisecond) // the player's pace, not a wait for an event
			}
		}()
	} else {
		close(read)
	}
	waitFor(t, 90*time.Second, "ENDED", func() bool { return m.event("box-frozen", pb.SessionEvent_KIND_ENDED) != nil })
	e := m.event("box-frozen", pb.SessionEvent_KIND_ENDED)
	if slow {
		<-read
	}
	consumed := cc.n.Load()
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

// dialRcvbuf connects to addr over TCP with a receive buffer of rcvbuf
// bytes asked (set before connecting, so that the window stays small: a
// player that stops reading holds the node's bytes back soon), closed
// when the test ends.
func dialRcvbuf(t *testing.T, addr string, rcvbuf int) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
