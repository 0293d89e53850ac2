package vodnode

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFFmpegPlaysTCPAndUDP(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	for i, tr := range []string{"tcp", "udp"} {
		tok := mint(t, "sess-"+tr, "sample-001", "node-1", "127.0.0.1", time.Minute)
		r := runFFmpeg(t, nodeURL(n, tok, "sample-001"), tr, 4)
		t.Logf("%s: %d frames in %v, %v from the first", tr, r.frames, r.elapsed, r.paced)
		if r.frames < 90 || r.frames > 110 {
			t.Errorf("%s: %d frames decoded, want about 100\n%s", tr, r.frames, r.stderr)
		}
		// played at its pace: not at once, and with no stall from the
		// first frame out (ffmpeg's start and probe, seconds on a
		// loaded machine, left out)
		if r.elapsed < 3*time.Second || r.paced == 0 || r.paced > 6*time.Second {
			t.Errorf("%s: 4 s of media took %v, %v from the first frame", tr, r.elapsed, r.paced)
		}
		if i == 0 && o.fetchCount("sample-001") != 1 {
			t.Errorf("fetches %d", o.fetchCount("sample-001"))
		}
	}
}

func TestFFprobeDescribe(t *testing.T) {
	if _, err := exec.LookPath("ffprobe"); err != nil {
		t.Skip("ffprobe not installed")
	}
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	tok := mint(t, "probe", "sample-001", "node-1", "", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-rtsp_transport", "tcp",
		"-show_entries", "stream=codec_name", "-of", "csv=p=0", nodeURL(n, tok, "sample-001")).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe: %v\n%s", err, out)
	}
	got := strings.Fields(string(out))
	if !slices.Contains(got, "h264") || !slices.Contains(got, "aac") {
		t.Fatalf("ffprobe streams %q", got)
	}
}
