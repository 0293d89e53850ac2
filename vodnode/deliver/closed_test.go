package deliver

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestClientHangsUpEndsClosed: a client whose TCP connection closes while
// it is sent to ends its stream as EndClosed ("connection-closed"), in
// MP2T and in elementary-stream mode, whether or not the RTSP
// connection's reader saw the close first. (MP2T ended as "error", and
// elementary streams as "slow-client", a broken pipe read as a slow
// reader.)
func TestClientHangsUpEndsClosed(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	for _, mode := range []string{"mp2t", "es"} {
		t.Run(mode, func(t *testing.T) {
			src := newMemSource(data)
			srv, cli := tcpPair(t)
			done := make(chan ended, 1)
			onEnd := func(r EndReason, err error) { done <- ended{r, err} }
			switch mode {
			case "mp2t":
				st, err := e.NewStream(StreamConfig{Source: src, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), OnEnd: onEnd})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				if _, err := st.Play(0); err != nil {
					t.Fatal(err)
				}
			case "es":
				tr, err := ProbeES(context.Background(), src)
				if err != nil {
					t.Fatal(err)
				}
				st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, 2}, OnEnd: onEnd})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				if _, err := st.Seek(0); err != nil {
					t.Fatal(err)
				}
				st.Resume()
			}
			cli.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(cli, make([]byte, 4096)); err != nil {
				t.Fatalf("no media: %v", err)
			}
			cli.Close()
			select {
			case d := <-done:
				if d.reason != EndClosed {
					t.Errorf("ended %q (%v), want %q", d.reason, d.err, EndClosed)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the stream to a closed connection did not end")
			}
		})
	}
}
