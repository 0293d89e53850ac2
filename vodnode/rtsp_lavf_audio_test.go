package vodnode

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLavfPastTheEndOfATitleWithoutVideo: on a title without video (AAC
// alone, stored whole), `ffmpeg -ss 500` ends within seconds, exit 0, and
// a libavformat PLAY without Range after the end (ffplay un-paused there)
// is answered 200 and the BYE sent again, in MP2T mode as in /es. In MP2T
// mode both were 457 (no keyframe to clamp the start to: deliver.Stream's
// seek answered ErrRange), ffmpeg waiting in silence until it was killed
// 20 s in, as before lavfSeekPastEnd.
func TestLavfPastTheEndOfATitleWithoutVideo(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	o := newFakeOrigin(t)
	const title = "audio-001"
	o.titles[title] = audioOnly(t, o.titles["sample-001"])
	n := startNode(t, startOrigin(t, o))
	waitPrefetch(t, n, title)
	const ua = "Lavf59.27.100"
	for _, mode := range []string{"mp2t", "es"} {
		tok := mint(t, "lavf-audio-past-end-"+mode, title, "node-1", "", time.Minute)
		url, track := nodeURL(n, tok, title), "/trackID=0"
		if mode == "es" {
			url, track = esURL(n, tok, title), "/trackID=2"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		out, err := exec.CommandContext(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error",
			"-rtsp_transport", "tcp", "-ss", "500", "-i", url, "-map", "0:a", "-f", "null", "-").CombinedOutput()
		cancel()
		if took := time.Since(start); err != nil || took > 10*time.Second || strings.Contains(string(out), "could not seek") {
			t.Errorf("%s: ffmpeg -ss 500: %v after %v, want exit 0 within seconds\n%s", mode, err, took, out)
		}

		c := dialRTSP(t, n)
		tok = mint(t, "lavf-audio-resume-end-"+mode, title, "node-1", "", time.Minute)
		url = nodeURL(n, tok, title)
		if mode == "es" {
			url = esURL(n, tok, title)
		}
		res := c.do("SETUP", url+track, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1", "User-Agent", ua)
		if res.StatusCode != 200 {
			t.Fatalf("%s: SETUP: %s", mode, statusLine(res))
		}
		id := sessionID(res)
		if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=19-", "User-Agent", ua); res.StatusCode != 200 {
			t.Fatalf("%s: PLAY npt=19-: %s", mode, statusLine(res))
		}
		awaitBye(t, c, mode+": first play")
		if res := c.do("PLAY", url+"/", "Session", id, "User-Agent", ua); res.StatusCode != 200 {
			t.Errorf("%s: PLAY without Range at the end: %s, want 200", mode, statusLine(res))
			continue
		}
		awaitBye(t, c, mode+": play at the end")
	}
}
