package deliver

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// TestWriteGivesUpAtItsBound: a response written behind a full queue
// waits while the connection takes bytes, past one timeout, but holds
// the writer (whose lock the node's session ends wait for) at most
// writeHolds timeouts: a client taking the queue slowly, 4 kB every
// 10 ms, its 512 kB in over a second, gets the write failed at 0.6 s of
// 0.2 s timeouts, though it read all along.
func TestWriteGivesUpAtItsBound(t *testing.T) {
	srv, cli := tcpPairBuf(t, 4096)
	srv.(*net.TCPConn).SetWriteBuffer(4096)
	w := NewConnWriter(srv, DefaultQueueLimit, 200*time.Millisecond)
	chunk := make([]byte, 16<<10)
	for queued := 0; queued < DefaultQueueLimit-len(chunk); {
		ok, err := w.TryWrite(chunk)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			queued += len(chunk)
		}
	}
	var read atomic.Int64
	go func() {
		b := make([]byte, 4<<10)
		for {
			k, err := cli.Read(b)
			read.Add(int64(k))
			if err != nil {
				return
			}
			time.Sleep(10 * time.Millisecond) // the client's pace, not a wait for an event
		}
	}()
	_, err := w.Write([]byte("RTSP/1.0 200 OK\r\nCSeq: 2\r\n\r\n"))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write behind 512 kB taken at 400 kB/s: %v, want it given up at %d timeouts", err, writeHolds)
	}
	if r := read.Load(); r < 64<<10 {
		t.Fatalf("the client read %d bytes while the write waited: want it to have taken bytes all along (a write given up for no progress is another test)", r)
	}
}
