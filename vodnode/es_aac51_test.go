package vodnode

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestESLargeAACFramesDecodeInFFmpeg: a title whose AAC frames are larger
// than an RTP packet (5.1 at 768 kbit/s: about 1.7 kB each) played as
// elementary streams over RTSP: ffmpeg reassembles each frame from its
// fragments by the whole frame's AU-size (RFC 3640 §3.2.1.1) and decodes
// the audio without an error. With each fragment's own length as AU-size
// it took every fragment for a frame and its decoder failed on them.
func TestESLargeAACFramesDecodeInFFmpeg(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	title, err := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-i", "../cdp/samples/clip-a.ts",
		"-f", "lavfi", "-t", "6", "-i", "anoisesrc=sample_rate=48000:amplitude=0.8",
		"-filter_complex", "[1:a]pan=5.1|c0=c0|c1=c0|c2=c0|c3=c0|c4=c0|c5=c0[a]",
		"-map", "0:v", "-map", "[a]", "-t", "6", "-c:v", "copy", "-c:a", "aac", "-b:a", "768k", "-f", "mpegts", "pipe:1").Output()
	if err != nil || len(title) == 0 {
		t.Fatalf("ffmpeg making the title: %v", err)
	}
	o := newFakeOrigin(t)
	o.titles["aac51"] = title
	n := startNode(t, startOrigin(t, o))
	waitPrefetch(t, n, "aac51")
	url := esURL(n, mint(t, "es-aac51", "aac51", "node-1", "", time.Minute), "aac51")
	cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-nostats", "-loglevel", "error", "-rtsp_transport", "tcp", "-i", url,
		"-t", "3", "-map", "0:a", "-f", "null", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if msg := strings.TrimSpace(stderr.String()); err != nil || msg != "" {
		t.Fatalf("ffmpeg decoding the 5.1 audio: %v\n%s", err, msg)
	}
}
