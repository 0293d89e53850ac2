package vodnode

import (
	"strings"
	"testing"
	"time"
)

// TestFFmpegSeekPastTheEndEnds: `ffmpeg -ss 500` on a 20 s title (its seek
// a PAUSE and a PLAY with Range npt=500-) ends within seconds, exit 0,
// over TCP as over UDP, in elementary-stream mode (/es) too. The node
// answered that PLAY 457, which ffmpeg only logged ("could not seek") before waiting for RTP the paused session
// never sent, deaf to SIGINT, until the node timed the session out (a
// minute); it is played from the last keyframe now and ends with its BYE
// (lavfSeekPastEnd). A client other than libavformat still gets 457
// (TestPlayAtTheEndIsRefused, TestTimedOutSessionSparesARequestInFlight).
func TestFFmpegSeekPastTheEndEnds(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	fillWhole(t, n, "sample-001")
	for _, tc := range []struct{ mode, tr string }{{"mp2t", "tcp"}, {"mp2t", "udp"}, {"es", "tcp"}} {
		tok := mint(t, "lavf-past-end-"+tc.mode+"-"+tc.tr, "sample-001", "node-1", "", time.Minute)
		url := nodeURL(n, tok, "sample-001")
		if tc.mode == "es" {
			url = esURL(n, tok, "sample-001")
		}
		// ffmpeg is killed 21 s in (runFFmpegArgs): well before the
		// session's timeout, well after an end that comes at once.
		r := runFFmpeg(t, url, tc.tr, 1, "-ss", "500")
		if r.elapsed > 10*time.Second {
			t.Errorf("ffmpeg -ss 500 (%s over %s) took %v, want an end within seconds\n%s", tc.mode, tc.tr, r.elapsed, r.stderr)
		}
		if strings.Contains(r.stderr, "could not seek") {
			t.Errorf("ffmpeg -ss 500 (%s over %s) could not seek:\n%s", tc.mode, tc.tr, r.stderr)
		}
	}
}

// A start past the end is clamped for libavformat only: another client
// (here GStreamer's User-Agent) is answered 457, nothing changed, and
// libavformat's is answered 200 from the last keyframe.
func TestSeekPastTheEndClampedForLavfOnly(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	for ua, want := range map[string]int{"GStreamer/1.22.0": 457, "Lavf59.27.100": 200} {
		c := dialRTSP(t, n)
		url := nodeURL(n, mint(t, "clamp-"+ua, "sample-001", "node-1", "", time.Minute), "sample-001")
		res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast", "User-Agent", ua)
		if res.StatusCode != 200 {
			t.Fatalf("SETUP: %s", statusLine(res))
		}
		waitComplete(t, n, "sample-001") // stored whole: the last keyframe (filling: TestLavfPastTheEndOfATitleFilling)
		res = c.do("PLAY", url+"/", "Session", sessionID(res), "Range", "npt=60-", "User-Agent", ua)
		if int(res.StatusCode) != want {
			t.Errorf("%s: PLAY npt=60- of a 20 s title: %s, want %d", ua, statusLine(res), want)
		}
		if r := res.Header["Range"]; want == 200 && (len(r) != 1 || !strings.HasPrefix(r[0], "npt=") || r[0] == "npt=60.000-") {
			t.Errorf("%s: Range %q, want the last keyframe's", ua, r)
		}
	}
}

// A start past the end with a Scale other than 1 (trick play, which
// libavformat never asks for) is 457 to libavformat's User-Agent too: only
// its normal play is clamped. "Scale: 2" was clamped and played the last
// keyframe.
func TestSeekPastTheEndInTrickPlayIsRefusedToLavf(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	fillWhole(t, n, "sample-001")
	for _, scale := range []string{"2", "-2", "4"} {
		c := dialRTSP(t, n)
		url := nodeURL(n, mint(t, "clamp-scale"+scale, "sample-001", "node-1", "", time.Minute), "sample-001")
		res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast", "User-Agent", "Lavf59.27.100")
		if res.StatusCode != 200 {
			t.Fatalf("SETUP: %s", statusLine(res))
		}
		res = c.do("PLAY", url+"/", "Session", sessionID(res), "Range", "npt=60-", "Scale", scale, "User-Agent", "Lavf59.27.100")
		if res.StatusCode != 457 {
			t.Errorf("Lavf, Scale %s: PLAY npt=60- of a 20 s title: %s %v, want 457", scale, statusLine(res), res.Header["Range"])
		}
	}
}

// fillWhole has n fill title whole, as a viewer's SETUP has it filled: a
// start past the end is clamped only in a title stored whole.
func fillWhole(t *testing.T, n *Node, title string) {
	t.Helper()
	c := dialRTSP(t, n)
	url := nodeURL(n, mint(t, "fill-"+title, title, "node-1", "", time.Minute), title)
	if res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	waitComplete(t, n, title)
}

// TestLavfPlayWithoutRangeAtTheEnd: a PLAY without a Range after the end
// of the title (its BYE sent), as ffplay un-paused after the end sends,
// is answered 200 to libavformat's User-Agent, the last keyframe played
// and the BYE sent again at once: it was 457, and libavformat, its BYE
// count cleared by the PLAY, waited for RTP in silence. Another client
// (GStreamer's User-Agent) is still answered 457 (nothing to play from
// where the session stands), MP2T and /es alike.
func TestLavfPlayWithoutRangeAtTheEnd(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	fillWhole(t, n, "sample-001")
	for _, mode := range []string{"mp2t", "es"} {
		for ua, want := range map[string]int{"GStreamer/1.22.0": 457, "Lavf59.27.100": 200} {
			c := dialRTSP(t, n)
			tok := mint(t, "lavf-resume-end-"+mode+ua, "sample-001", "node-1", "", time.Minute)
			url, track := nodeURL(n, tok, "sample-001"), "/trackID=0"
			if mode == "es" {
				url, track = esURL(n, tok, "sample-001"), "/trackID=1" // the video
			}
			res := c.do("SETUP", url+track, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1", "User-Agent", ua)
			if res.StatusCode != 200 {
				t.Fatalf("%s %s: SETUP: %s", mode, ua, statusLine(res))
			}
			id := sessionID(res)
			if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=19-", "User-Agent", ua); res.StatusCode != 200 {
				t.Fatalf("%s %s: PLAY npt=19-: %s", mode, ua, statusLine(res))
			}
			awaitBye(t, c, mode+" "+ua+": first play")
			res = c.do("PLAY", url+"/", "Session", id, "User-Agent", ua)
			if int(res.StatusCode) != want {
				t.Errorf("%s %s: PLAY without Range at the end: %s, want %d", mode, ua, statusLine(res), want)
				continue
			}
			if want == 200 {
				awaitBye(t, c, mode+" "+ua+": play at the end")
			}
		}
	}
}

// awaitBye reads c's interleaved frames until an RTCP BYE on channel 1,
// failing t after 10 s.
func awaitBye(t *testing.T, c *testClient, what string) {
	t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.c.SetReadDeadline(time.Time{})
	for {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("%s: no RTCP BYE: %v", what, err)
		}
		if ch == 1 && hasBye(b) {
			return
		}
	}
}
