package deliver

import (
	"context"
	"testing"
	"time"
)

// TestAbortWhileFailedFillByeDue: over TCP, an MP2T or elementary-stream
// play whose title's fill failed has ended, its RTCP BYE "fill failed"
// still waiting for the connection's writer (busy with a response), when
// the node aborts its session (the manager's order): Abort cancels that
// BYE, and then must send its own, as for a stream still playing. It
// sent nothing ("the stream had ended"), and the client, told neither,
// waited in silence until its keepalive met the ended session. OnEnd
// still hears the failure, once; Abort's channel closes once the BYE
// went.
func TestAbortWhileFailedFillByeDue(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"mp2t", "es"} {
		t.Run(kind, func(t *testing.T) {
			e := startEngine(t, false)
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			wire := readWire(cli, teardownAnswer)
			src := newFillingSource(clip)
			src.reveal(PayloadSize * 150)
			held := make(chan struct{})
			fa := &failingAtEnd{memSource: src, hook: func() {
				cw.mu.Lock() // a response being written
				close(held)
			}}
			ends := make(chan EndReason, 2)
			onEnd := func(r EndReason, _ error) { ends <- r }
			var st interface {
				Close()
				Abort(string) <-chan struct{}
				WaitingForFill() bool
			}
			var byeDue func() bool
			tracks := 1
			switch kind {
			case "mp2t":
				fa.from = "vodcluster/vodnode/deliver.(*Stream).step"
				ms, err := e.NewStream(StreamConfig{Source: fa, Mode: RTPTCP, Conn: cw, SSRC: 1, OnEnd: onEnd})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ms.Play(0); err != nil {
					t.Fatal(err)
				}
				st = ms
				byeDue = func() bool {
					ms.mu.Lock()
					defer ms.mu.Unlock()
					return ms.bye.pending()
				}
			case "es":
				tracks = 2
				fa.from = "vodcluster/vodnode/deliver.(*ESStream).run"
				es, err := e.NewESStream(ESConfig{Source: fa, Tracks: tr, Mode: RTPTCP, Conn: cw,
					Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}, OnEnd: onEnd})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := es.Seek(0); err != nil {
					t.Fatal(err)
				}
				es.Resume()
				st = es
				byeDue = func() bool {
					es.mu.Lock()
					defer es.mu.Unlock()
					return es.bye.pending()
				}
			}
			defer st.Close()
			waitUntil(t, 10*time.Second, "the play to wait for the fill", st.WaitingForFill)
			failFill(src)
			select {
			case <-held:
			case <-time.After(10 * time.Second):
				t.Fatal("the play did not end at the failure")
			}
			for end := time.Now().Add(5 * time.Second); !byeDue(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					cw.mu.Unlock()
					t.Fatal("no BYE waiting for the writer")
				}
			}
			quiet := st.Abort("ended by the manager")
			cw.mu.Unlock()
			select {
			case <-quiet:
			case <-time.After(15 * time.Second):
				t.Fatal("Abort's channel not closed")
			}
			// The BYEs are awaited (up to 10 s), not read for a fixed
			// spell: a reader slow to read them on a loaded machine
			// missed them.
			byes := 0
			cli.SetReadDeadline(time.Now().Add(10 * time.Second))
			for ev := range wire {
				if ev.bye {
					if byes++; byes == tracks {
						break
					}
				}
			}
			if byes < tracks {
				t.Errorf("%d RTCP BYEs after the abort, want %d (one per track)", byes, tracks)
			}
			select {
			case r := <-ends:
				if r != EndError {
					t.Errorf("OnEnd(%s), want %s", r, EndError)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnEnd not called")
			}
			select {
			case r := <-ends:
				t.Errorf("OnEnd called again (%s)", r)
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}
