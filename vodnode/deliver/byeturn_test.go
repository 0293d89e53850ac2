package deliver

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// slowConn is a client's side of a connection that reads at most 4 KiB
// each 200 µs (a viewer on a slower link than the node's): a writer to it
// keeps blocking.
type slowConn struct{ net.Conn }

func (c slowConn) Read(p []byte) (int, error) {
	time.Sleep(200 * time.Microsecond)
	return c.Conn.Read(p[:min(len(p), 4096)])
}

// busyWriter writes frames of another session's RTP (channel 4) to cw
// back to back, as an elementary-stream play of a second session on the
// same connection does with a slow client (each write waits for the
// connection), until stop is closed or for d at most; the channel
// returned is closed once it stopped.
func busyWriter(t *testing.T, cw *ConnWriter, d time.Duration, stop <-chan struct{}, written *atomic.Int64) <-chan struct{} {
	t.Helper()
	frame := appendFrame(nil, 4, make([]byte, otherFrame-4))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for end := time.Now().Add(d); time.Now().Before(end); {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := cw.Write(frame); err != nil {
				t.Errorf("the other session's write: %v", err)
				return
			}
			written.Add(1)
		}
	}()
	return done
}

// otherFrame is the size of busyWriter's frames, bytes.
const otherFrame = 1404

// TestEndOfTitleByeTakesItsTurnOnBusyWriter: over TCP, the end-of-title
// BYE of an MP2T stream whose connection writer is busy as it ends is
// sent while another session on the same connection keeps the writer
// busy with its packets (written back to back to a slow client) past the
// writer's blocking-write timeout: the BYE gets its turn between them.
// It was tried every 50 ms without waiting, never found the writer free,
// and was given up once the timeout had passed: the client waited in
// silence.
func TestEndOfTitleByeTakesItsTurnOnBusyWriter(t *testing.T) {
	clip := loadClip(t)
	title := prefix(t, clip, 1)
	title = title[:len(title)-len(title)%PayloadSize] // the play reaches the last byte before the title is complete
	e := startEngine(t, false)
	srv, cli := tcpPairBuf(t, 16<<10)
	// A small send buffer too: the writer is woken as the client reads,
	// not once it has read half of megabytes queued.
	if err := srv.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer cli.Close()
	const timeout = 2 * time.Second
	cw := NewConnWriter(srv, 0, timeout)
	client := readByeFrames(slowConn{cli})
	ms := newFillingSource(title)
	ms.mu.Lock()
	ms.b.Write(title)
	ms.shown, ms.idx = len(title), *ms.b.Index()
	ms.mu.Unlock()
	held := make(chan struct{})
	src := &heldAtEnd{memSource: ms, hook: func() {
		cw.mu.Lock() // the other session's packet being written
		close(held)
	}}
	ends := make(chan EndReason, 4)
	st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: cw, SSRC: 1,
		OnEnd: func(r EndReason, _ error) { ends <- r }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the play to wait at the last byte", st.WaitingForFill)
	waitUntil(t, 10*time.Second, "the title's bytes", func() bool { return client.media.Load() == int64(len(title)) })
	ms.reveal(len(title)) // complete: the stream's next step ends the play
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not look at its title again")
	}
	select {
	case r := <-ends:
		if r != EndOfTitle {
			t.Fatalf("OnEnd(%s), want %s", r, EndOfTitle)
		}
	case <-time.After(5 * time.Second):
		cw.mu.Unlock()
		t.Fatal("the play did not end")
	}
	// The other session's packets, back to back, for three times the
	// writer's timeout; the first waits for the writer held above.
	var others atomic.Int64
	stop := make(chan struct{})
	other := busyWriter(t, cw, 3*timeout, stop, &others)
	waitUntil(t, 5*time.Second, "the other session's write to wait", func() bool {
		return goroutineIn("deliver.busyWriter", "deliver.(*ConnWriter).Write(")
	})
	cw.mu.Unlock()
	select {
	case b := <-client.byes:
		if b.reason != "end of title" || b.media != int64(len(title)) {
			t.Errorf("BYE %q after %d media bytes, want %q after %d", b.reason, b.media, "end of title", len(title))
		}
	case <-other:
		t.Fatalf("no BYE while the other session wrote %d packets for %v", others.Load(), 3*timeout)
	}
	stopBusy(t, stop, other, &others)
	checkTurnTaken(t, cli, client, st.BytesSent(), others.Load())
}

// stopBusy stops busyWriter (stop, other) once it has written two
// packets at least, as checkTurnTaken wants: the BYE, taken by its
// first write, may reach the client before it wrote a second (up to 5 s).
func stopBusy(t *testing.T, stop chan struct{}, other <-chan struct{}, written *atomic.Int64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); written.Load() < 2 && time.Now().Before(end); {
		select {
		case <-other:
			end = time.Now() // it stopped on its own
		case <-time.After(5 * time.Millisecond):
		}
	}
	close(stop)
	<-other
}

// checkTurnTaken checks, once the other session stopped, that it had
// written more than its first packet (it kept the writer busy) and that
// the client got the stream's BytesSent (the BYE included) and the other
// session's packets, and no more.
func checkTurnTaken(t *testing.T, cli net.Conn, client *byeClient, sent, others int64) {
	t.Helper()
	if others < 2 {
		t.Errorf("the other session wrote %d packets: the writer was not kept busy", others)
	}
	// The other session's packets written after the BYE are still to
	// read: read them (however long a loaded machine's slow client
	// takes), then what is left, at once.
	want := sent + others*otherFrame
	waitUntil(t, 10*time.Second, "the client to read the BYE and the other session's packets", func() bool { return client.bytes.Load() >= want })
	cli.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	<-client.done
	if got := client.bytes.Load(); got != want {
		t.Errorf("the client got %d bytes, BytesSent %d and the other session's %d", got, sent, others*otherFrame)
	}
	select {
	case b := <-client.byes:
		t.Errorf("a further BYE %q", b.reason)
	default:
	}
}

// TestESEndOfTitleByeTakesItsTurnOnBusyWriter: as
// TestEndOfTitleByeTakesItsTurnOnBusyWriter for the end-of-title BYEs of
// an elementary-stream play, one per track.
func TestESEndOfTitleByeTakesItsTurnOnBusyWriter(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	title := prefix(t, clip, 1)
	e := startEngine(t, false)
	srv, cli := tcpPairBuf(t, 16<<10)
	if err := srv.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer cli.Close()
	const timeout = 2 * time.Second
	cw := NewConnWriter(srv, 0, timeout)
	client := readByeFrames(slowConn{cli})
	held := make(chan struct{})
	src := &atESEnd{memSource: newMemSource(title), hook: func() {
		cw.mu.Lock() // the other session's packet being written
		close(held)
	}}
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: cw,
		Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the play did not reach the end of the title")
	}
	for end := time.Now().Add(5 * time.Second); !st.AtEnd(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			cw.mu.Unlock()
			t.Fatal("the stream does not wait at the end of its title")
		}
	}
	var others atomic.Int64
	stop := make(chan struct{})
	other := busyWriter(t, cw, 3*timeout, stop, &others)
	waitUntil(t, 5*time.Second, "the other session's write to wait", func() bool {
		return goroutineIn("deliver.busyWriter", "deliver.(*ConnWriter).Write(")
	})
	cw.mu.Unlock()
	for i := range 2 {
		select {
		case b := <-client.byes:
			if b.reason != "end of title" {
				t.Errorf("BYE %q, want %q", b.reason, "end of title")
			}
		case <-other:
			t.Fatalf("%d of 2 BYEs while the other session wrote %d packets for %v", i, others.Load(), 3*timeout)
		}
	}
	stopBusy(t, stop, other, &others)
	checkTurnTaken(t, cli, client, st.BytesSent(), others.Load())
}

// TestAbortByeTakesItsTurnOnBusyWriter: over TCP, the BYE of an MP2T
// stream aborted while its connection's writer is busy, written by
// Abort's goroutine waiting for the writer, is sent while another
// session on the same connection keeps the writer busy with its packets
// past the writer's timeout: it waits its turn among their writes, not
// for the writer to be free.
func TestAbortByeTakesItsTurnOnBusyWriter(t *testing.T) {
	clip := loadClip(t)
	e := startEngine(t, false)
	srv, cli := tcpPairBuf(t, 16<<10)
	if err := srv.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer cli.Close()
	const timeout = 2 * time.Second
	cw := NewConnWriter(srv, 0, timeout)
	client := readByeFrames(slowConn{cli})
	st, err := e.NewStream(StreamConfig{Source: newMemSource(clip), Mode: RTPTCP, Conn: cw, SSRC: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Play(0); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "media", func() bool { return client.media.Load() > 0 })
	cw.mu.Lock() // the other session's packet being written
	var others atomic.Int64
	stop := make(chan struct{})
	other := busyWriter(t, cw, 3*timeout, stop, &others)
	waitUntil(t, 5*time.Second, "the other session's write to wait", func() bool {
		return goroutineIn("deliver.busyWriter", "deliver.(*ConnWriter).Write(")
	})
	written := st.Abort("evicted")
	waitUntil(t, 5*time.Second, "the BYE's write to wait", func() bool {
		return goroutineIn("deliver.(*Stream).Abort", "deliver.(*ConnWriter).Write(")
	})
	cw.mu.Unlock()
	select {
	case b := <-client.byes:
		if b.reason != "evicted" {
			t.Errorf("BYE %q, want %q", b.reason, "evicted")
		}
	case <-other:
		t.Fatalf("no BYE while the other session wrote %d packets for %v", others.Load(), 3*timeout)
	}
	<-written
	stopBusy(t, stop, other, &others)
	checkTurnTaken(t, cli, client, st.BytesSent(), others.Load())
}
