package vodnode

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMpvPastTheEndEnds: mpv plays rtsp:// through libavformat's RTSP
// demuxer under its own default User-Agent ("libmpv"; "mpv <version>"
// from older releases), which the node took for another client: its seek past
// the end (mpv --start=500) was answered 457, and libavformat waited in
// silence for RTP until the session timed out. Here ffmpeg with that
// User-Agent (-user_agent libmpv: libavformat under mpv's name) runs
// -ss 500 on a 20 s title stored whole and on one still filling from a
// slow origin: exit 0 within seconds, no "could not seek". Without
// libavformatAgent's mpv names both were 457, ffmpeg killed 30 s in.
func TestMpvPastTheEndEnds(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	t.Parallel() // real-time bound: overlaps the other real-client tests
	whole := startNode(t, startOrigin(t, newFakeOrigin(t)))
	fillWhole(t, whole, "sample-001")
	slow := newFakeOrigin(t)
	slow.rate = int64(len(slow.titles["sample-001"])) / 90 // a fill of about 90 s
	filling := startNode(t, startOrigin(t, slow))
	for _, tc := range []struct {
		what string
		n    *Node
	}{{"stored whole", whole}, {"filling", filling}} {
		tok := mint(t, "mpv-past-end-"+tc.what, "sample-001", "node-1", "", time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		out, err := exec.CommandContext(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error",
			"-user_agent", "libmpv", "-rtsp_transport", "tcp", "-ss", "500", "-i", nodeURL(tc.n, tok, "sample-001"),
			"-map", "0:v", "-f", "null", "-").CombinedOutput()
		cancel()
		if took := time.Since(start); err != nil || took > 15*time.Second || strings.Contains(string(out), "could not seek") {
			t.Errorf("%s: ffmpeg -user_agent libmpv -ss 500: %v after %v, want exit 0 within seconds\n%s", tc.what, err, took, out)
		}
	}
	if !stillFilling(filling, "sample-001") {
		t.Fatal("sample-001 is no longer filling: the test did not play a title still filling")
	}
}

// libavformat's default User-Agent and mpv's are libavformat's RTSP
// demuxer; others (and a prefix of another name) are not.
func TestLibavformatAgent(t *testing.T) {
	for ua, want := range map[string]bool{
		"Lavf59.27.100": true, " Lavf60.16.100 ": true, "libmpv": true, "mpv 0.32.0": true,
		"GStreamer/1.22.0": false, "LibVLC/3.0.18 (LIVE555 Streaming Media v2016.11.28)": false,
		"mpvfoo": false, "libmpv2": false, "": false, "gortsplib": false,
	} {
		if got := libavformatAgent(ua); got != want {
			t.Errorf("libavformatAgent(%q) = %v, want %v", ua, got, want)
		}
	}
}
