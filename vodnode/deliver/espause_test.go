package deliver

import (
	"slices"
	"testing"
	"time"
)

// TestESPauseResumesExactly: a PAUSE holds an elementary-stream play and a
// PLAY without Range (Seek(-1), Resume) goes on from the next packet of
// each track: no picture or audio frame skipped, none sent twice, nothing
// sent while paused, the sequence numbers and timestamps going on. (The
// play restarted at the first keyframe after what was sent, skipping up
// to a GOP and its audio: a second on the samples.)
func TestESPauseResumesExactly(t *testing.T) {
	e := startEngine(t, false)
	st, tr, cli := playESOverTCP(t, e, newMemSource(loadClip(t)))
	if _, err := st.Seek(4); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	before := readES(t, cli, 1500*time.Millisecond)
	pos := st.Pause()
	// What was on its way when the pause came, then nothing.
	tail := readES(t, cli, 300*time.Millisecond)
	if quiet := readES(t, cli, 700*time.Millisecond); len(quiet[0])+len(quiet[1]) > 0 {
		t.Fatalf("%d video and %d audio packets while paused", len(quiet[0]), len(quiet[1]))
	}
	info, err := st.Seek(-1)
	if err != nil {
		t.Fatal(err)
	}
	st.Resume()
	after := readES(t, cli, 1500*time.Millisecond)
	if pos < 5 || pos > 6.5 || info[0].NPT != pos {
		t.Errorf("paused at %.3f, PLAY answered %.3f: want the same, about 5.5", pos, info[0].NPT)
	}
	for i, name := range []string{"video", "audio"} {
		all := append(append(before[i], tail[i]...), after[i]...)
		if len(after[i]) == 0 || len(before[i]) == 0 {
			t.Fatalf("%s: %d packets before the pause, %d after", name, len(before[i]), len(after[i]))
		}
		for k := 1; k < len(all); k++ {
			if all[k].seq != all[k-1].seq+1 {
				t.Fatalf("%s: sequence %d after %d", name, all[k].seq, all[k-1].seq)
			}
		}
		if got := after[i][0].seq; got != info[i].Seq {
			t.Errorf("%s: first packet after the PLAY numbered %d, RTP-Info said %d", name, got, info[i].Seq)
		}
		// No time skipped: the timestamps of the frames (or audio
		// packets) on both sides of the pause are as close as any two.
		var ts []uint32
		for _, p := range all {
			ts = append(ts, p.ts)
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		gap := uint32(0)
		for k := 1; k < len(ts); k++ {
			gap = max(gap, ts[k]-ts[k-1])
		}
		clock := uint32(90000)
		if i == 1 {
			clock = uint32(tr.Audio.ClockRate())
		}
		if float64(gap)/float64(clock) > 0.25 {
			t.Errorf("%s: %.3f s of media skipped across the pause", name, float64(gap)/float64(clock))
		}
	}
}
