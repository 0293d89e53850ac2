package vodnode

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"
)

// vbrTitle returns a 40 s MPEG-TS title of variable bitrate made by
// ffmpeg: 20 s of noisy pictures at about 3 Mbit/s, then 20 s of a
// test pattern at about 0.8 Mbit/s (an action opening, then dialogue),
// H.264 with a keyframe each second. The test is skipped when ffmpeg is
// not installed.
func vbrTitle(t *testing.T) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ffmpeg", "-v", "error",
		"-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=20,noise=alls=60:allf=t+u",
		"-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=20",
		"-filter_complex", "[0:v][1:v]concat=n=2:v=1[v]", "-map", "[v]",
		"-c:v", "libx264", "-preset", "ultrafast", "-crf", "30", "-g", "25", "-f", "mpegts", "pipe:1")
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
	o.titles["vbr-001"] = vbrTitle(t)
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
