package deliver

import (
	"context"
	"testing"
	"time"
)

// TestESPlayFromAnAudioTrackLastPES: a play from a keyframe after which
// the second of two AAC tracks starts one PES packet only (its last: the
// track cut at 6.3 or 6.5 s, the play from 6 s) sends the video and the
// first track at once, whether the client set up the second or not.
// (The head's probe, at its end, was handed that last PES packet, which
// the play's reader, going on, gets only when a next one starts: never.
// Initialising, it read the title on in real time and nothing at all
// was sent, for 2 s and more.)
func TestESPlayFromAnAudioTrackLastPES(t *testing.T) {
	e := startEngine(t, false)
	for _, cut := range []float64{6.3, 6.5} {
		src := newMemSource(twoAudioTitleCut(t, cut))
		tr, err := ProbeES(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		for _, second := range []int{-1, 4} {
			srv, cli := tcpPair(t)
			st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0),
				Channel: [2]int{0, 2}, More: []ESTrackConfig{{Channel: second}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.SeekTracks(6); err != nil {
				t.Fatal(err)
			}
			st.Resume()
			start := time.Now()
			end := start.Add(3 * time.Second)
			buf := make([]byte, 65536)
			n := map[byte]int{}
			for n[0] < 10 || n[2] < 5 {
				c, _, ok := readFrame(t, cli, buf, end)
				if !ok {
					break
				}
				n[c]++
			}
			st.Close()
			if n[0] < 10 || n[2] < 5 {
				t.Errorf("second track cut at %g s (channel %d), play from 6 s: %d video and %d first-track packets in %v, want 10 and 5",
					cut, second, n[0], n[2], time.Since(start).Round(time.Millisecond))
			}
		}
	}
}
