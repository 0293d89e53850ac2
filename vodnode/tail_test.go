package vodnode

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/deliver"
)

// audioFrames returns how many audio frames ffmpeg decodes from input (a
// file or an RTSP URL, with the options before it), reading it to its end.
func audioFrames(t *testing.T, input ...string) int {
	t.Helper()
	return decodedFrames(t, "0:a", input...)
}

// bytesFrames returns how many frames of the streams picked by stream
// ffmpeg decodes from the MPEG-TS bytes data (written to a file first).
func bytesFrames(t *testing.T, stream string, data []byte) int {
	t.Helper()
	file := filepath.Join(t.TempDir(), "title.ts")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return decodedFrames(t, stream, "-i", file)
}

// decodedFrames returns how many frames of the streams picked by stream
// (an ffmpeg -map, e.g. 0:v) ffmpeg decodes from input, read to its end
// (at most 40 s), every frame counted once (no frame-rate conversion).
func decodedFrames(t *testing.T, stream string, input ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	args := append([]string{"-hide_banner", "-nostats", "-loglevel", "error"}, input...)
	args = append(args, "-map", stream, "-fps_mode", "passthrough", "-f", "framecrc", "-")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ffmpeg", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("ffmpeg %v: %v\n%s", input, err, stderr.String())
	}
	n := 0
	for _, line := range bytes.Split(out, []byte("\n")) {
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}

// TestFFmpegGetsTheTitlesEnd: ffmpeg playing a whole title over RTSP, in
// MP2T and elementary-stream mode, over TCP and UDP, decodes every audio
// frame of the title, the last ones too. Over UDP the end-of-title BYE
// travels on the RTCP socket beside the RTP one, and ffmpeg, which reads
// RTCP first when both are readable and stops at the BYE, lost the last
// quarter second of every title while the BYE went out with (or before)
// the last RTP packets.
func TestFFmpegGetsTheTitlesEnd(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	const title = "sample-001"
	want := bytesFrames(t, "0:a", o.titles[title])
	if want < 100 {
		t.Fatalf("the title has %d audio frames", want)
	}
	for _, mode := range []string{"mp2t", "es"} {
		for _, tr := range []string{"tcp", "udp"} {
			t.Run(mode+"-"+tr, func(t *testing.T) {
				t.Parallel()
				tok := mint(t, "tail-"+mode+"-"+tr, title, "node-1", "", time.Minute)
				url := nodeURL(n, tok, title)
				if mode == "es" {
					url = esURL(n, tok, title)
				}
				if got := audioFrames(t, "-rtsp_transport", tr, "-i", url); got != want {
					t.Errorf("%s over %s: %d audio frames, the title has %d", mode, tr, got, want)
				}
			})
		}
	}
}

// TestFFmpegPlaysToWhereTheFillStopped: the origin fails for good a
// quarter into a title while ffmpeg plays it over RTSP, in MP2T and
// elementary-stream mode: the fill fails (after fill_retry_for), and
// ffmpeg still decodes every audio frame of the bytes the fill left,
// then stops at the node's BYE ("fill failed"), exiting cleanly.
func TestFFmpegPlaysToWhereTheFillStopped(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	const title = "sample-002"
	o := newFakeOrigin(t)
	data := o.titles[title]
	cut := int64(len(data)/4) / 188 * 188
	o.failAt.Store(cut)
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.FillRetryFor = 300 * time.Millisecond
		n.ManagerAddr = maddr
	})
	want := bytesFrames(t, "0:a", data[:cut])
	for _, mode := range []string{"mp2t", "es"} {
		for _, tr := range []string{"tcp", "udp"} {
			t.Run(mode+"-"+tr, func(t *testing.T) {
				sid := "cut-" + mode + "-" + tr
				tok := mint(t, sid, title, "node-1", "", time.Minute)
				url := nodeURL(n, tok, title)
				if mode == "es" {
					url = esURL(n, tok, title)
				}
				// Each run after the first finds the title failed and
				// gone (a partial): it fills again, to the same cut.
				if got := audioFrames(t, "-rtsp_transport", tr, "-i", url); got < want-2 || got > want {
					t.Errorf("%s over %s: %d audio frames, the fill left %d", mode, tr, got, want)
				}
				// The stream ended by itself (its BYE "fill failed"), which
				// ffmpeg answers with a TEARDOWN: the session ends for the
				// stream's reason, whichever the node handles first.
				var e *pb.SessionEvent
				waitFor(t, 10*time.Second, "ENDED reported", func() bool {
					e = m.event(sid, pb.SessionEvent_KIND_ENDED)
					return e != nil
				})
				if e.GetReason() != string(deliver.EndError) {
					t.Errorf("%s over %s: ENDED reason %q, want %q (the fill failed)", mode, tr, e.GetReason(), deliver.EndError)
				}
			})
		}
	}
}
