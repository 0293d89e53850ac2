package deliver

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// goroutineIn reports whether a goroutine's stack holds both frames (a
// substring of each), such as a function and what it waits in.
func goroutineIn(frame, waiting string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, frame) && strings.Contains(g, waiting) {
			return true
		}
	}
	return false
}

// holdWriterOnPlay takes cw's lock, as a response being written does, and
// waits until the ES play's next packet waits for it (sendUnit in the
// writer's Write); the caller unlocks cw.mu.
func holdWriterOnPlay(t *testing.T, cw *ConnWriter) {
	t.Helper()
	cw.mu.Lock()
	for end := time.Now().Add(5 * time.Second); !goroutineIn("(*ESStream).sendUnit", "(*ConnWriter).Write"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			cw.mu.Unlock()
			t.Fatal("the play's next packet does not wait for the busy writer")
		}
	}
}

// TestESAbortWhilePlayingDoesNotWait: over TCP, Abort of a playing ES
// stream (the node or the manager ending the session) whose play waits to
// write a packet while the connection's writer is busy (a response being
// written) returns at once: it waited for the play's goroutine, that is
// for the writer, up to its 10 s timeout. Once the writer is free the
// packet goes, then each track's BYE, nothing after them; BytesSent, read
// as Abort returns (the session's end report), counts all the client gets.
// A connection closed before the writer frees gets neither, and no
// goroutine is left behind.
func TestESAbortWhilePlayingDoesNotWait(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	for _, closeConn := range []bool{false, true} {
		t.Run(map[bool]string{false: "busy", true: "busy-closed"}[closeConn], func(t *testing.T) {
			e := startEngine(t, false)
			before := runtime.NumGoroutine()
			srv, cli := tcpPair(t)
			cw := NewConnWriter(srv, 0, 0)
			client := readByeFrames(cli)
			st, err := e.NewESStream(ESConfig{Source: newMemSource(clip), Tracks: tr, Mode: RTPTCP, Conn: cw,
				Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Seek(0); err != nil {
				t.Fatal(err)
			}
			st.Resume()
			waitUntil(t, 5*time.Second, "media", func() bool { return client.media.Load() > 0 })
			holdWriterOnPlay(t, cw) // a response being written
			aborted := make(chan int64, 1)
			go func() {
				st.Abort("evicted")
				aborted <- st.BytesSent()
			}()
			var reported int64
			select {
			case reported = <-aborted:
			case <-time.After(5 * time.Second):
				cw.mu.Unlock()
				t.Fatal("Abort waited for the packet held by the busy writer")
			}
			if closeConn {
				srv.Close()
			}
			cw.mu.Unlock() // the response written
			if closeConn {
				noByeAfterClose(t, client)
			} else {
				var last byeSeen
				for i := range 2 {
					select {
					case last = <-client.byes:
						if last.reason != "evicted" {
							t.Errorf("BYE reason %q, want evicted", last.reason)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("%d of the 2 BYEs after Abort", i)
					}
				}
				cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				<-client.done
				if got := client.media.Load(); got != last.media {
					t.Errorf("%d media bytes after the BYEs", got-last.media)
				}
				if got, sent := client.bytes.Load(), st.BytesSent(); got != sent || got != reported {
					t.Errorf("the client got %d bytes, BytesSent %d, %d once Abort returned", got, sent, reported)
				}
			}
			srv.Close()
			cli.Close()
			waitUntil(t, 5*time.Second, "the play's and the BYEs' goroutines to end", func() bool {
				return runtime.NumGoroutine() <= before
			})
		})
	}
}
