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
			var closeFirst func()
			if closeConn {
				closeFirst = func() { CloseNow(srv) }
			}
			reported := abortWhileBusy(t, st, cw, closeFirst)
			if closeConn {
				cw.Close()
				noByeAfterClose(t, client)
			} else {
				byesAfterAbort(t, client, cli, st, 2, reported)
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
