package deliver

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// heldRTCPConn is a connection whose first RTCP frame written once armed
// (a sender report: the frame's channel odd, no BYE in it) waits, in the
// middle of its write, until release is closed; inRTCP is closed as it
// starts waiting. It has no file descriptor (not a syscall.Conn): its
// ConnWriter writes it directly, so that the wait holds the writer's
// caller where the socket would take the bytes.
type heldRTCPConn struct {
	net.Conn
	armed   atomic.Bool
	inRTCP  chan struct{}
	release chan struct{}
}

func (c *heldRTCPConn) Write(b []byte) (int, error) {
	if len(b) > 4 && b[0] == '$' && b[1]%2 == 1 && !frameHasBye(b[4:]) && c.armed.CompareAndSwap(true, false) {
		close(c.inRTCP)
		<-c.release
	}
	return c.Conn.Write(b)
}

// frameHasBye reports whether the RTCP compound packet b has a BYE.
func frameHasBye(b []byte) bool {
	ps, err := rtcp.Unmarshal(b)
	if err != nil {
		return false
	}
	for _, p := range ps {
		if _, ok := p.(*rtcp.Goodbye); ok {
			return true
		}
	}
	return false
}

// TestESAbortCountsReportInFlight: over TCP, a sender report that a
// PAUSEd ES play's report loop is writing as Abort comes (the node or the
// manager ending the session) is either counted in BytesSent once Abort
// returns, the session's end report, or not sent: Abort no longer waits
// for the play's goroutines (72be5a5), and the report, counted once its
// write returned, went to the client after Abort had returned and the
// session's bytes had been read, left out of them.
func TestESAbortCountsReportInFlight(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	e := startEngineSR(t, 100*time.Millisecond)
	srv, cli := tcpPair(t)
	hc := &heldRTCPConn{Conn: srv, inRTCP: make(chan struct{}), release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(hc.release)
		}
	}()
	client := readByeFrames(cli)
	st, err := e.NewESStream(ESConfig{Source: newMemSource(clip), Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(hc, 0, 0),
		Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	waitUntil(t, 5*time.Second, "media", func() bool { return client.media.Load() > 0 })
	st.Pause() // held: the report loop sends the reports
	hc.armed.Store(true)
	select {
	case <-hc.inRTCP:
	case <-time.After(5 * time.Second):
		t.Fatal("no sender report while paused")
	}
	aborted := make(chan int64, 1)
	go func() {
		st.Abort("evicted")
		aborted <- st.BytesSent()
	}()
	// Abort either returns at once, or waits for the report being
	// written: the report is let go then.
	var reported int64
	returned := false
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case reported = <-aborted:
			returned = true
		default:
		}
		if returned || goroutineIn("(*ESStream).Abort", "Mutex).Lock") {
			break
		}
		if time.Now().After(end) {
			t.Fatal("Abort neither returned nor waits for the stream")
		}
	}
	close(hc.release)
	released = true
	if !returned {
		select {
		case reported = <-aborted:
		case <-time.After(5 * time.Second):
			t.Fatal("Abort did not return once the report was written")
		}
	}
	for i := range 2 {
		select {
		case b := <-client.byes:
			if b.reason != "evicted" {
				t.Errorf("BYE reason %q, want evicted", b.reason)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of the 2 BYEs after Abort", i)
		}
	}
	cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	<-client.done
	if got, sent := client.bytes.Load(), st.BytesSent(); got != sent || got != reported {
		t.Errorf("the client got %d bytes, BytesSent %d, %d once Abort returned", got, sent, reported)
	}
}
