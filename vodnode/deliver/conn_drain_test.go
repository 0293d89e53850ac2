package deliver

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

// TestTCPQueueDrainsAfterTheEnd plays a title over interleaved TCP to a
// client that reads nothing until the stream has reached the end of the
// title, as a viewer on a link slower than the bitrate (a 560 kbit/s link
// for a 600 kbit/s title, in a trial) is behind at the end: the bytes left
// in the connection's queue, and the BYE, still reach it once it reads,
// though no stream writes the connection any more and the client sends
// nothing. Before, they stayed queued until the client's next request:
// ffmpeg, waiting for them, stalled with the last ~1.3 s of the title
// unplayed until the session timed out a minute after its PLAY.
func TestTCPQueueDrainsAfterTheEnd(t *testing.T) {
	e := startEngine(t, false)
	data := prefix(t, loadClip(t), 2)
	srv, cli := tcpPairBuf(t, 4096)
	srv.(*net.TCPConn).SetWriteBuffer(4096)
	w := NewConnWriter(srv, 0, 0)
	done := make(chan ended, 1)
	st, err := e.NewStream(StreamConfig{Source: newMemSource(data), Mode: RTPTCP, Conn: w, Channel: 0,
		OnEnd: func(r EndReason, err error) { done <- ended{r, err} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-done:
		if d.reason != EndOfTitle {
			t.Fatalf("end %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no end of title")
	}
	if q := w.Queued(); q < 32<<10 {
		t.Fatalf("only %d bytes queued at the end of the title: the client's slowness is not reproduced", q)
	}
	// Everything arrives, and then the BYE, with nothing sent by the client.
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []byte
	hdr := make([]byte, 4)
	buf := make([]byte, 65536)
	for bye := false; !bye; {
		if _, err := io.ReadFull(cli, hdr); err != nil {
			t.Fatalf("after %d of %d media bytes, no BYE: %v", len(got), len(data), err)
		}
		l := int(hdr[2])<<8 | int(hdr[3])
		if hdr[0] != '$' {
			t.Fatalf("frame starts with %q", hdr[0])
		}
		if _, err := io.ReadFull(cli, buf[:l]); err != nil {
			t.Fatalf("after %d of %d media bytes: %v", len(got), len(data), err)
		}
		if hdr[1] == 1 {
			ps, err := rtcp.Unmarshal(buf[:l])
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if _, ok := p.(*rtcp.Goodbye); ok {
					bye = true
				}
			}
			continue
		}
		var p rtp.Packet
		if err := p.Unmarshal(buf[:l]); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Payload...)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%d media bytes before the BYE, want the title's %d", len(got), len(data))
	}
}

// countingConn counts the writes ConnWriter makes on its socket.
type countingConn struct {
	*net.TCPConn
	writes atomic.Int64
}

func (c *countingConn) SyscallConn() (syscall.RawConn, error) {
	rc, err := c.TCPConn.SyscallConn()
	return countingRaw{rc, &c.writes}, err
}

type countingRaw struct {
	syscall.RawConn
	n *atomic.Int64
}

func (r countingRaw) Write(f func(fd uintptr) bool) error {
	r.n.Add(1)
	return r.RawConn.Write(f)
}

// TestStalledQueueBacksOff leaves bytes queued to a client that reads
// nothing for 2 s: the writer tries the socket ever less often while it
// takes nothing (a handful of tries, not one every 20 ms: 200 stalled
// connections cost 6% of a core), and once the client reads the queue
// still reaches it whole. Before, it was tried every 20 ms (about 100
// tries in 2 s) until the connection ended, up to the session timeout
// after the end of a title.
func TestStalledQueueBacksOff(t *testing.T) {
	srv, cli := tcpPairBuf(t, 4096)
	srv.(*net.TCPConn).SetWriteBuffer(4096)
	cc := &countingConn{TCPConn: srv.(*net.TCPConn)}
	w := NewConnWriter(cc, 0, 0)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	if ok, err := w.TryWrite(data); !ok || err != nil {
		t.Fatalf("TryWrite: %v %v", ok, err)
	}
	if w.Queued() == 0 {
		t.Fatal("nothing queued: the stall is not reproduced")
	}
	before := cc.writes.Load()
	time.Sleep(2 * time.Second) // the stall itself: nothing to wait for
	if n := cc.writes.Load() - before; n > 20 {
		t.Fatalf("%d writes tried in 2 s on a connection that takes nothing", n)
	}
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(data))
	if _, err := io.ReadFull(cli, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the queue after the stall: %v", err)
	}
}
