package vodnode

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// stillFilling reports whether n holds title only in part, its fill going
// on.
func stillFilling(n *Node, title string) bool {
	for _, s := range n.Titles() {
		if s.ID == title {
			return s.Filling && s.Stored < s.Size
		}
	}
	return false
}

// TestLavfPastTheEndOfATitleFilling: on a title still filling from a slow
// origin (minutes to fill), `ffmpeg -ss 500` of the 20 s title ends
// within seconds, exit 0, over TCP and UDP and in /es; a libavformat
// PLAY npt=60- is answered 200, Range at the title's end, and the
// end-of-title BYE comes at once, no media before it; a PLAY without
// Range then (ffplay un-paused) gets 200 and the BYE again, the session
// listed finished after each. Another
// client (GStreamer's User-Agent) is still answered 457. Before
// lavfEndHere such a PLAY was 457 to libavformat too, and ffmpeg, which
// only logs "could not seek", waited in silence for RTP until it was
// killed 30 s in (the session's timeout a minute); it ends in 1 to 5 s,
// its probe of the title's start waiting for the slow fill.
func TestLavfPastTheEndOfATitleFilling(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	const title = "sample-001"
	o.rate = int64(len(o.titles[title])) / 90 // a fill of about 90 s
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.ManagerAddr = maddr })
	// finished waits for a load report taken after now that lists sid
	// finished (the BYE goes before the node marks it).
	finished := func(sid, what string) {
		t.Helper()
		m.reportAfter(t, what+": "+sid+" listed finished", func(r *pb.LoadReport) bool {
			return slices.Contains(r.GetFinishedSessions(), sid)
		})
	}
	const ua = "Lavf59.27.100"
	for _, tc := range []struct{ mode, tr string }{{"mp2t", "tcp"}, {"mp2t", "udp"}, {"es", "tcp"}} {
		tok := mint(t, "lavf-filling-past-end-"+tc.mode+"-"+tc.tr, title, "node-1", "", time.Minute)
		url := nodeURL(n, tok, title)
		if tc.mode == "es" {
			url = esURL(n, tok, title)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		out, err := exec.CommandContext(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error",
			"-rtsp_transport", tc.tr, "-ss", "500", "-i", url, "-map", "0:v", "-f", "null", "-").CombinedOutput()
		cancel()
		t.Logf("%s over %s: ffmpeg -ss 500 took %v", tc.mode, tc.tr, time.Since(start))
		if took := time.Since(start); err != nil || took > 15*time.Second || strings.Contains(string(out), "could not seek") {
			t.Errorf("%s over %s: ffmpeg -ss 500: %v after %v, want exit 0 within seconds\n%s", tc.mode, tc.tr, err, took, out)
		}
	}
	if !stillFilling(n, title) {
		t.Fatalf("%s is no longer filling: the test did not play a title still filling", title)
	}

	for _, mode := range []string{"mp2t", "es"} {
		for u, want := range map[string]int{"GStreamer/1.22.0": 457, ua: 200} {
			c := dialRTSP(t, n)
			sid := "lavf-filling-resume-end-" + mode + u
			tok := mint(t, sid, title, "node-1", "", time.Minute)
			url, track := nodeURL(n, tok, title), "/trackID=0"
			if mode == "es" {
				url, track = esURL(n, tok, title), "/trackID=1" // the video
			}
			res := c.do("SETUP", url+track, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1", "User-Agent", u)
			if res.StatusCode != 200 {
				t.Fatalf("%s %s: SETUP: %s", mode, u, statusLine(res))
			}
			id := sessionID(res)
			res = c.do("PLAY", url+"/", "Session", id, "Range", "npt=60-", "User-Agent", u)
			if int(res.StatusCode) != want {
				t.Errorf("%s %s: PLAY npt=60- of a 20 s title filling: %s, want %d", mode, u, statusLine(res), want)
				continue
			}
			if want != 200 {
				continue
			}
			if r := res.Header["Range"]; len(r) != 1 || !strings.HasPrefix(r[0], "npt=2") || strings.HasPrefix(r[0], "npt=60") {
				t.Errorf("%s: Range %q, want the title's end (about 20 s)", mode, r)
			}
			awaitByeOnly(t, c, mode+": play past the end")
			finished(sid, mode+": play past the end")
			if res := c.do("PLAY", url+"/", "Session", id, "User-Agent", u); res.StatusCode != 200 {
				t.Errorf("%s: PLAY without Range at the end: %s, want 200", mode, statusLine(res))
				continue
			}
			awaitByeOnly(t, c, mode+": play at the end")
			finished(sid, mode+": play at the end")
		}
	}
	if !stillFilling(n, title) {
		t.Fatalf("%s is no longer filling: the test did not play a title still filling", title)
	}
}

// awaitByeOnly is awaitBye, failing t for any RTP packet (channel 0)
// before the BYE: the end told at once, no media.
func awaitByeOnly(t *testing.T, c *testClient, what string) {
	t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.c.SetReadDeadline(time.Time{})
	for {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("%s: no RTCP BYE: %v", what, err)
		}
		if ch == 0 {
			t.Fatalf("%s: RTP before the BYE", what)
		}
		if ch == 1 && hasBye(b) {
			return
		}
	}
}
