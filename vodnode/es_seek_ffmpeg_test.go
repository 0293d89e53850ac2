package vodnode

import (
	"testing"
	"time"
)

// TestESFFmpegSeekToZero: `ffmpeg -ss 0` on an elementary-stream play
// seeks to before the stream's first timestamp and asks for it as
// "Range: npt=0.-151-" (ffmpegBeforeStart); the node answered 457 and
// ffmpeg waited for its play until killed, with no frame. It plays from
// the start now, over TCP as over UDP. `-ss -0.849` there lands on a
// whole negative second, "Range: npt=-1.000-", played from the start too.
func TestESFFmpegSeekToZero(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	for _, tr := range []string{"tcp", "udp"} {
		tok := mint(t, "es-ss0-"+tr, "sample-001", "node-1", "", time.Minute)
		r := runFFmpeg(t, esURL(n, tok, "sample-001"), tr, 2, "-ss", "0")
		if r.frames < 40 || r.elapsed > 15*time.Second {
			t.Errorf("ffmpeg -ss 0 over %s: %d frames in %v\n%s", tr, r.frames, r.elapsed, r.stderr)
		}
	}
	tok := mint(t, "es-ss-whole", "sample-001", "node-1", "", time.Minute)
	r := runFFmpeg(t, esURL(n, tok, "sample-001"), "tcp", 2, "-ss", "-0.849")
	if r.frames < 20 || r.elapsed > 15*time.Second {
		t.Errorf("ffmpeg -ss -0.849 (npt=-1.000-): %d frames in %v\n%s", r.frames, r.elapsed, r.stderr)
	}
}
