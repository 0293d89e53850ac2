package vodnode

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// vbrTitle returns an MPEG-TS title of variable bitrate made by ffmpeg
// from scenes of the given lengths in seconds, alternately noisy
// pictures at about 3 Mbit/s and a test pattern at about 0.6 to
// 0.8 Mbit/s (the first noisy when noisyFirst), H.264 with a keyframe
// each second. The test is skipped when ffmpeg is not installed.
func vbrTitle(t *testing.T, noisyFirst bool, scenes ...int) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"-v", "error"}
	var concat strings.Builder
	for i, d := range scenes {
		src := fmt.Sprintf("testsrc2=s=320x240:r=25:d=%d", d)
		if (i%2 == 0) == noisyFirst {
			src += ",noise=alls=60:allf=t+u"
		}
		args = append(args, "-f", "lavfi", "-i", src)
		fmt.Fprintf(&concat, "[%d:v]", i)
	}
	fmt.Fprintf(&concat, "concat=n=%d:v=1[v]", len(scenes))
	args = append(args, "-filter_complex", concat.String(), "-map", "[v]",
		"-c:v", "libx264", "-preset", "ultrafast", "-crf", "30", "-g", "25", "-f", "mpegts", "pipe:1")
	cmd := exec.CommandContext(ctx, "ffmpeg", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("ffmpeg: %v\n%s", err, stderr.String())
	}
	return out
}

// A film whose first part has a higher bitrate than its mean, resumed in
// its second part far ahead of the fill: its mean bitrate places the
// PLAY's time 14 s early, and the read from the origin starts again
// nearer its time once its first PCR shows where it landed (as the
// points of the title's clock give it), rather than reading everything
// in between before the first picture (it read 2.4 MB: for a film
// resumed an hour in, minutes of it).
func TestRTSPPlayAheadReaimsOnAVariableBitrateTitle(t *testing.T) {
	aheadBounds(t, 50_000) // reads kept close to the play once it starts
	o := heldOrigin(t, 200_000)
	o.titles["vbr-001"] = vbrTitle(t, true, 20, 20)
	n := startNode(t, startOrigin(t, o))
	tc, url, id, vpid, first := aheadSession(t, n, o, "vbr-001", "ahead-vbr")
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt=32-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=32-: %d", res.StatusCode)
	}
	pts, _ := pictures(tc, vpid, first, 30*time.Second, reach(33))
	if len(pts) == 0 || pts[0] < 28 || pts[0] > 32.01 || pts[len(pts)-1] < 33 {
		t.Fatalf("pictures presented at %v after PLAY npt=32-, want from the keyframe at or before 32 s to 33 s", pts)
	}
	o.mu.Lock()
	offsets := o.offsets["vbr-001"]
	o.mu.Unlock()
	read := n.Stats().OriginRangeBytes
	t.Logf("origin reads at %v; %d bytes read far ahead of the fill", offsets, read)
	if read > 1_200_000 {
		t.Errorf("%d bytes read from the origin for a play from 32 s, want at most 1.2 MB", read)
	}
	if !stillFilling(n, "vbr-001") {
		t.Fatal("the title is no longer filling")
	}
}

// A short scene of high bitrate in a film of low bitrate (25 s at about
// 0.6 Mbit/s, 15 s at 3, 35 s at 0.6), resumed just after it: the read
// that lands in that scene past the time is started again earlier, but
// not before the furthest point known to be early enough, and plays (the
// secant through the scene reached 27 s back into the scenes before it,
// within the fill's gap, and the play waited for the fill).
func TestRTSPPlayAheadAfterAShortScene(t *testing.T) {
	aheadBounds(t, 50_000)
	o := heldOrigin(t, 200_000)
	o.titles["vbr-002"] = vbrTitle(t, false, 25, 15, 35)
	n := startNode(t, startOrigin(t, o))
	tc, url, id, vpid, first := aheadSession(t, n, o, "vbr-002", "ahead-scene")
	if res := tc.do("PLAY", url+"/", "Session", id, "Range", "npt=26.5-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=26.5-: %d", res.StatusCode)
	}
	pts, _ := pictures(tc, vpid, first, 30*time.Second, reach(28))
	o.mu.Lock()
	offsets := o.offsets["vbr-002"]
	o.mu.Unlock()
	if len(pts) == 0 || pts[0] < 23 || pts[0] > 26.51 || pts[len(pts)-1] < 28 {
		t.Fatalf("pictures presented at %v after PLAY npt=26.5- (origin reads at %v), want from the keyframe at or before 26.5 s to 28 s", pts, offsets)
	}
	t.Logf("origin reads at %v; %d bytes read far ahead of the fill", offsets, n.Stats().OriginRangeBytes)
	if !stillFilling(n, "vbr-002") {
		t.Fatal("the title is no longer filling")
	}
}
