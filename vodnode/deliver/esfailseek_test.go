package deliver

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestESSeekIndexedBeforeTheFillFailed: an elementary-stream seek into
// the part of a title not indexed when asked, which the fill then indexed
// before it failed, plays from there to where the fill stopped, then ends
// as the fill's failure (a viewer plays on to where the fill stopped, as
// from any other position); it ended at once, sending nothing.
func TestESSeekIndexedBeforeTheFillFailed(t *testing.T) {
	e := startEngine(t, false)
	data := loadClip(t)
	src := newFillingSource(data)
	src.reveal(len(data) / 4)
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := tcpPair(t)
	ended := make(chan EndReason, 1)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, -1},
		OnEnd: func(r EndReason, _ error) { ended <- r }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Seek(12); err != nil {
		t.Fatal(err)
	}
	src.reveal(len(data) * 9 / 10) // past 12 s
	src.mu.Lock()
	src.err = errors.New("origin gone")
	src.mu.Unlock()
	st.Resume()
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 65536)
	media := 0
	for media < 10 {
		ch, _, err := nextFrame(cli, buf)
		if err != nil {
			t.Fatalf("%d RTP packets from 12 s, which the fill indexed before it failed: %v", media, err)
		}
		if ch == 0 {
			media++
		}
	}
	select {
	case r := <-ended:
		t.Fatalf("ended (%s) while it plays what the fill left", r)
	default:
	}
}
