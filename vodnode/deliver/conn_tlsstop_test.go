package deliver

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"
)

// narrowTLSPair is tlsPair whose client asks a receive buffer, and whose
// server socket a send buffer, of 4096 bytes: a viewer that stops reading
// soon holds its writer's batch back.
func narrowTLSPair(t *testing.T) (server *tls.Conn, client *tls.Conn) {
	t.Helper()
	server, client = tlsPair(t, 4096)
	server.NetConn().(*net.TCPConn).SetWriteBuffer(4096)
	return server, client
}

// startLaggingEngine starts an engine of one shard whose MaxLag is 300 ms
// (a stream that long behind its player is ended as a slow one, unless
// the player stopped reading, its host alive); the caller closes it.
func startLaggingEngine(t *testing.T) *Engine {
	t.Helper()
	e := &Engine{Shards: 1, MaxLag: 300 * time.Millisecond}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	return e
}

// playClip plays the test clip from its start on e over RTP/TCP through
// w, and returns the stream and the channel that takes how it ended.
func playClip(t *testing.T, e *Engine, w *ConnWriter) (*Stream, chan ended) {
	t.Helper()
	done := make(chan ended, 1)
	s, err := e.NewStream(StreamConfig{Source: newMemSource(loadClip(t)), Mode: RTPTCP, Conn: w,
		OnEnd: func(r EndReason, err error) { done <- ended{r, err} }})
	if err != nil {
		t.Fatal(err)
	}
	s.Play(0)
	return s, done
}

// An RTSPS viewer that stops reading, its host alive, is told apart from
// a slow one as a plain viewer is (ReaderStopped, PeerHolding): its
// writer's batch waits past the timeout, the writer does not fail, and
// when the viewer reads again, slowly, a response queued behind the full
// queue waits as long as the connection takes bytes (past the timeout),
// and everything arrives whole and in order. Before, the batch in flight
// failed the connection a timeout after it began, and a response failed
// a timeout after it was queued.
func TestConnWriterTLSStoppedReaderWaits(t *testing.T) {
	srv, cli := narrowTLSPair(t)
	const timeout = time.Second
	const limit = 48 << 10
	w := NewConnWriter(srv, limit, timeout)
	defer w.Close()
	var sent bytes.Buffer
	chunk := make([]byte, 1400)
	for i := 0; i < 10_000; i++ { // until the queue is full (a refusal may be the writer busy a moment)
		for k := range chunk {
			chunk[k] = byte(i + k)
		}
		ok, err := w.TryWrite(chunk)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			sent.Write(chunk)
		} else if w.Queued()+len(chunk) > limit {
			break
		}
	}
	waitUntil(t, 10*time.Second, "the writer seeing the viewer stopped, its host alive", func() bool {
		return w.ReaderStopped(200*time.Millisecond) && w.PeerHolding()
	})
	// Three timeouts on, the viewer still not reading: the writer waits,
	// unfailed (a time that passes, not a wait for an event).
	time.Sleep(3 * timeout)
	if ok, err := w.TryWrite([]byte("x")); err != nil {
		t.Fatalf("writer of a stopped viewer failed: %v", err)
	} else if ok {
		sent.WriteByte('x')
	}
	if !w.ReaderStopped(200*time.Millisecond) || !w.PeerHolding() {
		t.Fatal("stopped viewer no longer seen stopped")
	}
	// Reading again at 20 kB/s: the queue, the sockets' buffers and the
	// response take about 2 s, more than the timeout.
	resp := []byte("RTSP/1.0 200 OK\r\nCSeq: 9\r\n\r\n")
	want := append(sent.Bytes(), resp...)
	const readEach = 1024
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(want))
		cli.SetReadDeadline(time.Now().Add(20 * time.Second))
		for n := 0; n < len(b); {
			m, err := io.ReadFull(cli, b[n:min(n+readEach, len(b))])
			n += m
			if err != nil {
				got <- b[:n]
				return
			}
			time.Sleep(50 * time.Millisecond) // the reader's pace, not a wait for an event
		}
		got <- b
	}()
	start := time.Now()
	if _, err := w.Write(resp); err != nil {
		t.Fatalf("response behind the queue of a viewer reading again, after %v: %v", time.Since(start), err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("response written in %v, less than the timeout: the test does not show its wait", took)
	} else {
		t.Logf("response written in %v", took)
	}
	b := <-got
	if len(b) < len(want) {
		t.Fatalf("read %d of %d bytes", len(b), len(want))
	}
	if !bytes.Equal(b, want) {
		t.Fatal("bytes arrived out of order or changed")
	}
}

// TestTLSPlayerStoppedReadingWaits: a stream over RTSPS whose player
// stops reading, its host alive, waits at its position past the lag that
// ends a slow one and past its writer's timeout (ReaderStopped), and
// goes on when the player reads again. Before, its writer's batch failed
// a timeout after it began and the stream was ended.
func TestTLSPlayerStoppedReadingWaits(t *testing.T) {
	e := startLaggingEngine(t)
	defer e.Close()
	srv, cli := narrowTLSPair(t)
	const timeout = time.Second
	w := NewConnWriter(srv, 64<<10, timeout)
	defer w.Close()
	s, done := playClip(t, e, w)
	readFrames(t, cli, 32<<10, 5*time.Second)
	// Stopped: nothing read.
	waitUntil(t, 10*time.Second, "the stream waiting for its stopped player", func() bool {
		select {
		case d := <-done:
			t.Fatalf("stream of a stopped player ended: %v %v", d.reason, d.err)
		default:
		}
		return s.ReaderStopped() && e.ReaderStops() >= 1 && w.PeerHolding()
	})
	select {
	case d := <-done:
		t.Fatalf("stream of a stopped player ended: %v %v", d.reason, d.err)
	case <-time.After(3 * timeout): // a time that passes, not a wait for an event
	}
	if !s.ReaderStopped() {
		t.Fatal("stream no longer waiting for its stopped player")
	}
	// Reading again: the title goes on.
	got, _, _ := readFrames(t, cli, 200<<10, 15*time.Second)
	if len(got) < 200<<10 {
		t.Fatalf("read %d bytes after resuming", len(got))
	}
	select {
	case d := <-done:
		t.Fatalf("stream ended after its player read again: %v %v", d.reason, d.err)
	default:
	}
	if s.ReaderStopped() {
		t.Fatal("stream still waiting after its player read again")
	}
}

// TestSlowTLSReader: an RTSPS client reading slower than the title's
// bitrate (a link too slow for it), its host alive, is still ended as a
// slow one after MaxLag (TestSlowTCPReader over TLS): its connection
// takes bytes, its writer's batches are written on. The link is read
// under TLS, its bytes as they come: a TLS client reads whole records
// (up to 16 KiB), so 512 bytes of its plaintext every 20 ms would leave
// the socket unread 0.6 s at a time, not a slow link.
func TestSlowTLSReader(t *testing.T) {
	e := startLaggingEngine(t)
	defer e.Close()
	srv, cli := narrowTLSPair(t)
	// The link's bytes, read as they come (a TLS client reads whole
	// records): 512 bytes every 20 ms, 25 kB/s, a third of the clip's
	// bitrate.
	raw := cli.NetConn()
	go func() {
		var b [512]byte
		for {
			if _, err := io.ReadFull(raw, b[:]); err != nil {
				return // closed as a slow client, or at the test's end
			}
			time.Sleep(20 * time.Millisecond) // the link's pace, not a wait for an event
		}
	}()
	w := NewConnWriter(srv, 64<<10, time.Second)
	defer w.Close()
	_, done := playClip(t, e, w)
	select {
	case d := <-done:
		if d.reason != EndSlow {
			t.Fatalf("end %v %v, want slow", d.reason, d.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("slow reader never ended")
	}
	if e.ReaderStops() != 0 {
		t.Errorf("slow reader taken for a stopped one %d times", e.ReaderStops())
	}
}
