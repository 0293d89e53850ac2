package deliver

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestESAbortByeWaitsForBusyWriter: over TCP, Abort of an ES stream whose
// connection's writer is busy (a response being written) does not wait
// for it and does not drop the tracks' BYEs: each goes once the writer is
// free, and BytesSent, read as soon as Abort returns (the session's end
// report), counts them, as the client gets them. A connection closed
// before the writer frees gets none, and the goroutine that waited ends.
// The stream is one never played, or one played to the end of its title
// (its play's goroutines gone, its end-of-title BYEs sent).
func TestESAbortByeWaitsForBusyWriter(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	title := prefix(t, clip, 1)
	for _, played := range []bool{false, true} {
		for _, closeConn := range []bool{false, true} {
			name := map[bool]string{false: "unplayed", true: "at-end"}[played] + map[bool]string{false: "-busy", true: "-busy-closed"}[closeConn]
			t.Run(name, func(t *testing.T) {
				e := startEngine(t, false)
				before := runtime.NumGoroutine()
				srv, cli := tcpPair(t)
				cw := NewConnWriter(srv, 0, 0)
				client := readByeFrames(cli)
				ends := make(chan EndReason, 1)
				st, err := e.NewESStream(ESConfig{Source: newMemSource(title), Tracks: tr, Mode: RTPTCP, Conn: cw,
					Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}, OnEnd: func(r EndReason, _ error) { ends <- r }})
				if err != nil {
					t.Fatal(err)
				}
				if played {
					if _, err := st.Seek(0); err != nil {
						t.Fatal(err)
					}
					st.Resume()
					select {
					case r := <-ends:
						if r != EndOfTitle {
							t.Fatalf("play ended %s, want %s", r, EndOfTitle)
						}
					case <-time.After(10 * time.Second):
						t.Fatal("no end of title")
					}
					for range 2 {
						select {
						case b := <-client.byes:
							if b.reason != "end of title" {
								t.Fatalf("BYE %q at the end of the title", b.reason)
							}
						case <-time.After(5 * time.Second):
							t.Fatal("no end-of-title BYE per track")
						}
					}
				}
				var closeFirst func()
				if closeConn {
					closeFirst = func() { srv.Close() }
				}
				reported := abortWhileBusy(t, st, cw, closeFirst)
				if closeConn {
					noByeAfterClose(t, client)
				} else {
					byesAfterAbort(t, client, cli, st, 2, reported)
				}
				srv.Close()
				cli.Close()
				waitUntil(t, 5*time.Second, "the BYEs' goroutine to end", func() bool {
					return runtime.NumGoroutine() <= before
				})
			})
		}
	}
}
