package vodnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
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

// gstRace is the signature of a race inside GStreamer's rtspsrc at EOS
// (over UDP, and now and then over TCP): the pipeline's PAUSE request is cut by its own CLOSE (the
// connection is flushed while the PAUSE is being sent), which rtspsrc
// posts as an error (exit status 1) although it then tears the session
// down normally. The node never sees the PAUSE.
func gstRace(out string) bool {
	var errs []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, ".c(") && strings.Contains(line, "gstrtspsrc.c") {
			errs = append(errs, line)
		}
	}
	if len(errs) == 0 || !strings.Contains(out, "Got EOS") {
		return false
	}
	for _, e := range errs {
		if !strings.Contains(e, "gst_rtspsrc_pause") && !strings.Contains(e, "gst_rtspsrc_try_send") {
			return false
		}
	}
	return strings.Count(out, "(Received end-of-file)") == len(errs)
}

// TestGStreamerPlaysToTheEnd plays whole titles with gst-launch-1.0
// (rtspsrc and the MP2T depayloader, as set-top box stacks built on
// GStreamer do) over TCP and UDP: at the end of the title the node sends
// an RTCP BYE, GStreamer reaches EOS, tears the session down (the manager
// hears ENDED, reason teardown) and exits 0, after about the title's play
// time; a pipeline that syncs to the clock (sink sync=true) on a whole
// title still being filled from the origin does not hang past the end;
// and a recording of the whole title decodes frame for frame.
func TestGStreamerPlaysToTheEnd(t *testing.T) {
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		t.Skip("gst-launch-1.0 not installed")
	}
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	o.rate = 100 << 10 // bytes/s, about the titles' bitrate: they fill while they play
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.ManagerAddr = maddr })
	dir := t.TempDir()
	whole := filepath.Join(dir, "short-003.ts")
	if err := os.WriteFile(whole, o.titles["short-003"], 0o644); err != nil {
		t.Fatal(err)
	}
	wantFrames := countFrames(t, whole)
	for _, tc := range []struct {
		name, proto string
		titles      []string // played at once
		seconds     float64
		sink        []string
	}{
		{"tcp", "tcp", []string{"short-001"}, shortSeconds, []string{"tsdemux", "!", "fakesink"}},
		{"udp", "udp", []string{"short-002"}, shortSeconds, []string{"tsdemux", "!", "fakesink"}},
		{"tcp-sync", "tcp", []string{"sample-004", "sample-005"}, 20,
			[]string{"tsdemux", "!", "queue", "!", "h264parse", "!", "fakesink", "sync=true"}},
		{"udp-record", "udp", []string{"short-003"}, shortSeconds, []string{"filesink", "location=" + filepath.Join(dir, "rec.ts")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var wg sync.WaitGroup
			for i, title := range tc.titles {
				wg.Add(1)
				go func() {
					defer wg.Done()
					gstPlay(t, n, m, fmt.Sprintf("gst-%s-%d", tc.name, i), title, tc.proto, tc.seconds, tc.sink)
				}()
			}
			wg.Wait()
			if tc.name == "udp-record" {
				if got := countFrames(t, filepath.Join(dir, "rec.ts")); got < wantFrames-2 {
					t.Errorf("recording decodes %d frames, the title has %d", got, wantFrames)
				}
			}
		})
	}
}

// gstPlay plays title with gst-launch-1.0 into sink and checks that it
// ends cleanly after about its play time and tears the session down.
func gstPlay(t *testing.T, n *Node, m *fakeManager, sid, title, proto string, seconds float64, sink []string) {
	url := nodeURL(n, mint(t, sid, title, "node-1", "", time.Minute), title)
	args := append([]string{"-e", "rtspsrc", "location=" + url, "protocols=" + proto, "!", "rtpmp2tdepay", "!"}, sink...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+15)*time.Second)
	defer cancel()
	start := time.Now()
	b, err := exec.CommandContext(ctx, "gst-launch-1.0", args...).CombinedOutput()
	took, out := time.Since(start), string(b)
	switch {
	case ctx.Err() != nil:
		t.Errorf("%s: gst-launch-1.0 still running %v after a %.0f s title started:\n%s", sid, took, seconds, out)
		return
	case err != nil && gstRace(out): // seen over UDP, and rarely over TCP
		t.Logf("%s: rtspsrc's own PAUSE/CLOSE race at EOS (exit 1 after a clean EOS and TEARDOWN):\n%s", sid, out)
	case err != nil:
		t.Errorf("%s: gst-launch-1.0 after %v: %v\n%s", sid, took, err, out)
		return
	case !strings.Contains(out, "Got EOS") || strings.Contains(out, "ERROR"):
		t.Errorf("%s: no clean EOS:\n%s", sid, out)
		return
	}
	if took < time.Duration((seconds-1)*float64(time.Second)) {
		t.Errorf("%s: a %.0f s title played in %v", sid, seconds, took)
	}
	waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event(sid, pb.SessionEvent_KIND_ENDED) != nil })
	if e := m.event(sid, pb.SessionEvent_KIND_ENDED); e.GetReason() != "teardown" {
		t.Errorf("%s: ENDED %+v, want reason teardown", sid, e)
	}
	t.Logf("%s: exit %v after %v", sid, err, took)
}
