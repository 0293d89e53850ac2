package deliver

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestESRangeEndResumesExactly: a play with a stop (a PLAY Range's end,
// npt=4-5.5) sends every packet due before 5.5 s, then nothing, its
// position 5.5 s; a PLAY without Range (Seek(-1), SetStop(-1), Resume)
// goes on from the next packet of each track, as after a PAUSE: no
// picture or audio frame skipped, none sent twice, the sequence numbers
// and timestamps going on. (The play restarted at the first keyframe
// after what was read, skipping up to a GOP and its audio: 0.8 s here.)
func TestESRangeEndResumesExactly(t *testing.T) {
	e := startEngine(t, false)
	src := newMemSource(loadClip(t))
	first := src.idx.FirstPTS
	tr, err := ProbeES(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	rate := float64(tr.Audio.ClockRate())
	srv, cli := tcpPair(t)
	st, err := e.NewESStream(ESConfig{Source: src, Tracks: tr, Mode: RTPTCP, Conn: NewConnWriter(srv, 0, 0), Channel: [2]int{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const stop = 5.5
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.SetStop(stop)
	st.Resume()
	before := readES(t, cli, 2500*time.Millisecond) // 1.5 s to play from the keyframe at 4 s
	if quiet := readES(t, cli, 700*time.Millisecond); len(quiet[0])+len(quiet[1]) > 0 {
		t.Fatalf("%d video and %d audio packets past the Range's end", len(quiet[0]), len(quiet[1]))
	}
	if pos := st.Position(); math.Abs(pos-stop) > 0.01 {
		t.Errorf("held at %.3f s, want the Range's end, %g", pos, stop)
	}
	npt := func(i int, ts uint32) float64 {
		if i == 1 {
			return float64(ts)/rate - float64(first)/90000
		}
		return float64(int64(ts)-first) / 90000
	}
	for i, name := range []string{"video", "audio"} {
		if len(before[i]) == 0 {
			t.Fatalf("%s: nothing before the Range's end", name)
		}
		hi := 0.0
		for _, p := range before[i] {
			hi = max(hi, npt(i, p.ts))
		}
		// A picture leaves at its DTS, up to a few frames before its PTS.
		if hi < stop-0.3 || hi > stop+0.25 {
			t.Errorf("%s: the last sent is at %.3f s, want about the Range's end, %g", name, hi, stop)
		}
	}
	info, err := st.Seek(-1)
	if err != nil {
		t.Fatal(err)
	}
	st.SetStop(-1)
	st.Resume()
	after := readES(t, cli, 1500*time.Millisecond)
	if math.Abs(info[0].NPT-stop) > 0.01 {
		t.Errorf("PLAY on answered npt %.3f, want %g", info[0].NPT, stop)
	}
	for i, name := range []string{"video", "audio"} {
		if len(after[i]) == 0 {
			t.Fatalf("%s: nothing after the PLAY", name)
		}
		all := append(before[i], after[i]...)
		for k := 1; k < len(all); k++ {
			if all[k].seq != all[k-1].seq+1 {
				t.Fatalf("%s: sequence %d after %d", name, all[k].seq, all[k-1].seq)
			}
		}
		if got := after[i][0].seq; got != info[i].Seq {
			t.Errorf("%s: first packet after the PLAY numbered %d, RTP-Info said %d", name, got, info[i].Seq)
		}
		clock := 90000.0
		if i == 1 {
			clock = rate
		}
		if g := float64(maxGap(all)) / clock; g > 0.25 {
			t.Errorf("%s: %.3f s of media skipped across the Range's end", name, g)
		}
		if i == 1 {
			for k := 1; k < len(all); k++ {
				if int32(all[k].ts-all[k-1].ts) <= 0 {
					t.Fatalf("audio: timestamp %d after %d (sent twice?)", all[k].ts, all[k-1].ts)
				}
			}
		}
	}
}
