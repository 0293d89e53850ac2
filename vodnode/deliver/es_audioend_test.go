package deliver

import (
	"os/exec"
	"testing"
	"time"
)

// shortAudioTitle returns clip-a remuxed by ffmpeg with its audio cut at
// 6 s (the video runs to 20 s): a title whose audio track ends early.
func shortAudioTitle(t *testing.T) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", "../../cdp/samples/clip-a.ts", "-t", "6", "-i", "../../cdp/samples/clip-a.ts",
		"-map", "0:v", "-map", "1:a", "-c", "copy", "-f", "mpegts", "pipe:1")
	data, err := cmd.Output()
	if err != nil || len(data) == 0 {
		t.Fatalf("ffmpeg: %v", err)
	}
	return data
}

// TestESPlayAfterAudioEnds: a play from a point after which the title's
// audio has no more packets sends its pictures at once and its position
// moves on. The demultiplexer used to read, in real time and holding it
// all in memory, the rest of the title looking for the audio's first
// packet (to learn its config) before sending anything: nothing went out.
func TestESPlayAfterAudioEnds(t *testing.T) {
	data := shortAudioTitle(t)
	e := startEngine(t, false)
	st, tr, cli := playESOverTCP(t, e, newMemSource(data))
	if tr.Video == nil || tr.Audio == nil {
		t.Fatalf("tracks %+v, want video and audio", tr)
	}
	if _, err := st.Seek(12); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	start := time.Now()
	got := readES(t, cli, 2500*time.Millisecond)
	if len(got[0]) < 10 {
		t.Fatalf("%d video and %d audio packets in 2.5 s of a play from 12 s (audio ends at 6 s), want pictures", len(got[0]), len(got[1]))
	}
	if first := got[0][0].at.Sub(start); first > 1500*time.Millisecond {
		t.Errorf("first picture %v after the play started, want at once", first)
	}
	if len(got[1]) != 0 {
		t.Errorf("%d audio packets after the audio's end", len(got[1]))
	}
	if pos := st.Position(); pos < 12.5 {
		t.Errorf("position %.2f s 2.5 s into a play from 12 s, want on past 12.5", pos)
	}
	// A play from before the audio's end still sends it.
	if _, err := st.Seek(2); err != nil {
		t.Fatal(err)
	}
	st.Resume()
	got = readES(t, cli, 2500*time.Millisecond)
	if len(got[0]) < 10 || len(got[1]) < 5 {
		t.Errorf("%d video and %d audio packets in 2.5 s of a play from 2 s, want both", len(got[0]), len(got[1]))
	}
}
