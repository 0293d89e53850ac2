package deliver

import (
	"context"
	"testing"
	"time"
)

// TestESEngineBytesNeverGoBack: the engine's BytesSent, the node's
// vodnode_sent_bytes_total counter and the egress of its load reports,
// never decreases. An ES packet over TCP counts in its stream's
// BytesSent as it is handed to the connection's writer (the session's
// end report has it though Abort does not wait for its write) and is
// taken back there if its write fails; the engine's total counts it once
// written: taken back there too, a packet held by a busy writer (up to
// the writer's 10 s timeout) and then lost took the node's counter
// below a value already scraped (read by Prometheus as a counter reset)
// and a load report's egress below zero.
func TestESEngineBytesNeverGoBack(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	e := startEngine(t, false)
	srv, cli := tcpPair(t)
	cw := NewConnWriter(srv, 0, 0)
	client := readByeFrames(cli)
	ends := make(chan EndReason, 2)
	st, err := e.NewESStream(ESConfig{Source: newMemSource(clip), Tracks: tr, Mode: RTPTCP, Conn: cw,
		Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}, OnEnd: func(r EndReason, _ error) { ends <- r }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Seek(0); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	waitUntil(t, 5*time.Second, "media", func() bool { return client.media.Load() > 0 })
	holdWriterOnPlay(t, cw)  // a response being written
	scraped := e.BytesSent() // the held packet handed over, not written
	srv.Close()              // the client gone meanwhile
	cw.mu.Unlock()           // the packet's write fails
	select {
	case r := <-ends:
		if r != EndClosed {
			t.Errorf("OnEnd(%s), want %s", r, EndClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the play did not end with its connection")
	}
	if got := e.BytesSent(); got < scraped {
		t.Errorf("the engine's BytesSent went back from %d to %d", scraped, got)
	}
	cli.Close()
	<-client.done
	if got, sent := client.bytes.Load(), st.BytesSent(); got != sent {
		t.Errorf("the client got %d bytes, BytesSent %d", got, sent)
	}
	if got, sent := client.bytes.Load(), e.BytesSent(); got != sent {
		t.Errorf("the client got %d bytes, the engine's BytesSent %d", got, sent)
	}
}
