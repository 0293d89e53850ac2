package vodnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// countFrames returns the number of video frames ffprobe decodes in a file.
func countFrames(t *testing.T, path string) int {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "quiet", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Logf("ffprobe %s: %v", path, err)
		return 0
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// runFor runs cmd, interrupts it (SIGINT) after d and waits for it.
func runFor(t *testing.T, cmd *exec.Cmd, d time.Duration) string {
	t.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return out.String()
	case <-time.After(d):
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	return out.String()
}

// TestGStreamerPlaysToTheEnd plays whole titles with gst-launch-1.0
// (rtspsrc and the MP2T depayloader, as set-top box stacks built on
// GStreamer do) over TCP and UDP: at the end of the title the node sends
// an RTCP BYE, GStreamer reaches EOS, tears the session down and exits 0,
// in about the title's play time; a pipeline that syncs to the clock
// (sink sync=true) on a title still being filled from the origin does not
// hang past the end; and a recording of the whole title decodes frame for
// frame.
func TestGStreamerPlaysToTheEnd(t *testing.T) {
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		t.Skip("gst-launch-1.0 not installed")
	}
	o := newFakeOrigin(t)
	o.rate = 100 << 10 // bytes/s, about the titles' bitrate: they fill while they play
	n := startNode(t, startOrigin(t, o))
	dir := t.TempDir()
	whole := filepath.Join(dir, "short-003.ts")
	if err := os.WriteFile(whole, o.titles["short-003"], 0o644); err != nil {
		t.Fatal(err)
	}
	wantFrames := countFrames(t, whole)
	for _, tc := range []struct {
		name, proto, title string
		sink               []string
	}{
		{"tcp", "tcp", "short-001", []string{"tsdemux", "!", "fakesink"}},
		{"udp", "udp", "short-002", []string{"tsdemux", "!", "fakesink"}},
		{"tcp-sync", "tcp", "short-003", []string{"tsdemux", "!", "queue", "!", "h264parse", "!", "fakesink", "sync=true"}},
		{"udp-record", "udp", "short-003", []string{"filesink", "location=" + filepath.Join(dir, "rec.ts")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := nodeURL(n, mint(t, "gst-"+tc.name, tc.title, "node-1", "", time.Minute), tc.title)
			args := append([]string{"-e", "rtspsrc", "location=" + url, "protocols=" + tc.proto, "!", "rtpmp2tdepay", "!"}, tc.sink...)
			ctx, cancel := context.WithTimeout(context.Background(), (shortSeconds+20)*time.Second)
			defer cancel()
			start := time.Now()
			out, err := exec.CommandContext(ctx, "gst-launch-1.0", args...).CombinedOutput()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("gst-launch-1.0 after %v: %v\n%s", took, err, out)
			}
			if !strings.Contains(string(out), "Got EOS") || strings.Contains(string(out), "ERROR") {
				t.Fatalf("no clean EOS:\n%s", out)
			}
			if took < (shortSeconds-1)*time.Second {
				t.Errorf("a %d s title played in %v", shortSeconds, took)
			}
			t.Logf("%s: exit 0 after %v", tc.name, took)
			if tc.name == "udp-record" {
				if got := countFrames(t, filepath.Join(dir, "rec.ts")); got < wantFrames-2 {
					t.Errorf("recording decodes %d frames, the title has %d", got, wantFrames)
				}
			}
		})
	}
}
