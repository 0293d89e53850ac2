package vodnode

import (
	"bufio"
	"net"
	"syscall"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestESAbortBytesSentLeaveOutFailedWrites: the bytes_sent of an
// elementary-stream session over TCP that the node ends on the manager's
// order while the play's next packet waits for the connection (its client
// not reading) leave out that packet and the RTCP BYEs when their writes
// then fail (the client hangs up): they counted as handed to the writer,
// the session's end being reported as Abort returned, before the writes
// failed. bytes_sent is exactly the interleaved frames the client read,
// and the client got no BYE (but when the writes went through before the
// client hung up: its kernel may still take a little).
func TestESAbortBytesSentLeaveOutFailedWrites(t *testing.T) {
	t.Parallel()
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	sid, title := "es-abort-bytes-failed", "sample-003"
	c := stalledESPlay(t, n, sid, title)
	nc := c.c
	const reason = "ended by the manager (test)"
	if !n.endAdmission(sid, reason) {
		t.Fatal("no live session to end")
	}
	// The client hangs up (its sending side): the node closes the
	// connection, failing the packet's write and the BYEs'. What the
	// node wrote before is still delivered; the client reads it all
	// once the node has closed the connection.
	if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the node to close the connection", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.conns) == 0
	})
	var ended *pb.SessionEvent
	waitFor(t, 30*time.Second, "ENDED reported", func() bool {
		ended = m.event(sid, pb.SessionEvent_KIND_ENDED)
		return ended != nil
	})
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	byes := 0
	for {
		ch, b, err := c.frame()
		if err != nil {
			break // the end of what the node wrote (a frame cut short by its failed write is not counted)
		}
		if ch%2 == 1 && hasBye(b) {
			byes++
		}
	}
	// The BYEs' write fails, unless the packet before them got through
	// first: a client not reading still takes a little now and then (its
	// kernel packing its receive queue opens the window again), and the
	// BYEs then go too, counted. Either way bytes_sent is what it read.
	if byes != 0 && byes != 2 {
		t.Errorf("%d RTCP BYEs read, want none (their write failed) or one per track", byes)
	}
	if ended.GetReason() != reason {
		t.Errorf("ENDED reason %q", ended.GetReason())
	}
	if got, want := ended.GetBytesSent(), c.frameBytes; got != want {
		t.Errorf("bytes_sent %d, the client read %d bytes of interleaved frames (%+d)", got, want, got-want)
	}
}

// stalledESPlay plays title to an elementary-stream client over TCP
// (both tracks interleaved) on a connection with small socket buffers,
// under the admission session sid, reads 20 RTP packets and stops
// reading: it returns once the play's next packet waits for the
// connection (the client not reading).
func stalledESPlay(t *testing.T, n *Node, sid, title string) *testClient {
	t.Helper()
	tok := mint(t, sid, title, "node-1", "", time.Minute)
	url := esURL(n, tok, title)
	// A small receive buffer: the connection fills within a second of
	// the client no longer reading.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", n.RTSPAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &testClient{t: t, c: nc, br: bufio.NewReader(nc)}
	res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP video: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("SETUP", url+"/trackID=2", "Transport", "RTP/AVP/TCP;unicast;interleaved=2-3", "Session", id); res.StatusCode != 200 {
		t.Fatalf("SETUP audio: %s", statusLine(res))
	}
	// And a small send buffer on the node's side.
	n.mu.Lock()
	for rc := range n.conns {
		if err := rc.nc.(interface{ SetWriteBuffer(int) error }).SetWriteBuffer(4096); err != nil {
			t.Error(err)
		}
	}
	n.mu.Unlock()
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-"); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for rtp := 0; rtp < 20; {
		ch, _, err := c.frame()
		if err != nil {
			t.Fatalf("after %d RTP packets: %v", rtp, err)
		}
		if ch%2 == 0 {
			rtp++
		}
	}
	// The client stops reading: the play's next packet waits for the
	// connection.
	waitFor(t, 15*time.Second, "the play's packet waiting for the connection", func() bool {
		return goroutineWaitingIn("deliver.(*ESStream).sendUnit(", "deliver.(*ConnWriter).Write(", "internal/poll.(*pollDesc).waitWrite(")
	})
	return c
}
