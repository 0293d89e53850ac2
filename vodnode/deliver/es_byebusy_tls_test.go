package deliver

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestESAbortByeWaitsForBusyTLSWriter: as TestESAbortByeWaitsForBusyWriter
// over an RTSPS connection (whose writer's goroutine writes its queue):
// the BYEs handed over while the writer is busy arrive once it is free,
// counted as the client gets them; a writer closed meanwhile (the
// connection gone) sends none and the goroutine that waited ends.
func TestESAbortByeWaitsForBusyTLSWriter(t *testing.T) {
	clip := loadClip(t)
	tr, err := ProbeES(context.Background(), newMemSource(clip))
	if err != nil {
		t.Fatal(err)
	}
	title := prefix(t, clip, 1)
	for _, closeConn := range []bool{false, true} {
		t.Run(map[bool]string{false: "busy", true: "busy-closed"}[closeConn], func(t *testing.T) {
			e := startEngine(t, false)
			before := runtime.NumGoroutine()
			srv, cli := tlsPair(t, 0)
			cw := NewConnWriter(srv, 0, 0)
			client := readByeFrames(cli)
			st, err := e.NewESStream(ESConfig{Source: newMemSource(title), Tracks: tr, Mode: RTPTCP, Conn: cw,
				Channel: [2]int{0, 2}, SSRC: [2]uint32{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			cw.mu.Lock() // busy
			aborted := make(chan struct{})
			var reported int64
			go func() {
				defer close(aborted)
				st.Abort("evicted")
				reported = st.BytesSent()
			}()
			select {
			case <-aborted:
			case <-time.After(5 * time.Second):
				cw.mu.Unlock()
				t.Fatal("Abort waited for the busy writer")
			}
			if closeConn {
				CloseNow(srv)
			}
			cw.mu.Unlock()
			if closeConn {
				cw.Close()
				<-client.done
				select {
				case b := <-client.byes:
					t.Errorf("BYE %q over a connection closed before it could go", b.reason)
				default:
				}
			} else {
				for i := range 2 {
					select {
					case b := <-client.byes:
						if b.reason != "evicted" {
							t.Errorf("BYE reason %q, want evicted", b.reason)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("%d of the 2 tracks' BYEs after Abort", i)
					}
				}
				cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				<-client.done
				if got := client.bytes.Load(); got != reported || got != st.BytesSent() {
					t.Errorf("the client got %d bytes, BytesSent %d, %d once Abort returned", got, st.BytesSent(), reported)
				}
				cw.Close()
			}
			CloseNow(srv)
			cli.Close()
			waitUntil(t, 5*time.Second, "the BYEs' goroutine to end", func() bool {
				return runtime.NumGoroutine() <= before
			})
		})
	}
}
