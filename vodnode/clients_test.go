package vodnode

import (
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

// TestGStreamer plays over TCP and UDP with rtspsrc and the MP2T
// depayloader, and checks the recorded TS decodes.
func TestGStreamer(t *testing.T) {
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		t.Skip("gst-launch-1.0 not installed")
	}
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	for _, proto := range []string{"tcp", "udp"} {
		out := filepath.Join(t.TempDir(), "gst.ts")
		url := nodeURL(n, mint(t, "gst-"+proto, "sample-001", "node-1", "", time.Minute), "sample-001")
		cmd := exec.Command("gst-launch-1.0", "-e", "rtspsrc", "location="+url, "protocols="+proto, "latency=200",
			"!", "rtpmp2tdepay", "!", "filesink", "location="+out)
		log := runFor(t, cmd, 4*time.Second)
		if st, err := os.Stat(out); err == nil {
			t.Logf("recorded %d bytes", st.Size())
		}
		frames := countFrames(t, out)
		t.Logf("gstreamer %s: %d frames", proto, frames)
		if frames < 50 {
			t.Errorf("gstreamer over %s: %d frames in 4 s\n%s", proto, frames, log)
		}
	}
}
