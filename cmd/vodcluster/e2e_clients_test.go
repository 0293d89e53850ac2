package main

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/cdp/tsindex"
)

// TestFFmpegSeekThroughFrontDoor: ffmpeg with -ss 10 on the RTSP input,
// over TCP and UDP, through the front door. ffmpeg asks PLAY Range npt=T-
// where T is in stream timestamps (10 + the input's start time) less 3/23
// s when the probe found the video reordered (ffmpeg's "dts heuristic",
// fftools: the seek then lands before the B-frames' reference): T is read
// from the PLAY ffmpeg sent (its trace log), not guessed. The node starts
// at the keyframe presented at or before T, so the first picture decoded
// (-noaccurate_seek: ffmpeg drops nothing) is that keyframe, its PTS as in
// the title's index, and the play goes on from there in real time.
func TestFFmpegSeekThroughFrontDoor(t *testing.T) {
	t.Parallel()
	c := startPlaybackCluster(t, 2, 100_000_000, nil)
	for i, tr := range []string{"tcp", "udp"} {
		t.Run(tr, func(t *testing.T) {
			title := fmt.Sprintf("sample-01%d", i+1)
			idx := sampleIndex(t, c, title)
			seek, start, took, log := showFrames(t, c.frontURL("demo", "demo", title), tr, 75, "-loglevel", "trace", "-ss", "10", "-noaccurate_seek")
			asked, ok := lastPlayNPT(log)
			if !ok {
				t.Fatalf("no PLAY with a Range npt in ffmpeg's log:\n%s", log)
			}
			if asked < 10+start-0.2 || asked > 10+start {
				t.Errorf("ffmpeg asked npt=%.3f for -ss 10 with start %.3f: want 10+start, or 3/23 s less", asked, start)
			}
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, "Range: npt=") {
					t.Logf("%s: %s", tr, strings.TrimSpace(l)) // the Ranges asked and answered
				}
			}
			k := idx.KeyframeAt(asked)
			if k < 0 || idx.Keyframes[k].PTS < 0 {
				t.Fatalf("no keyframe with a PTS at or before npt %.3f in %s's index", asked, title)
			}
			want := float64(idx.Keyframes[k].PTS) / tsindex.PTSHz
			t.Logf("%s: -ss 10 (start %.3f, npt=%.3f asked): first picture at %.3f s, keyframe %d at %.3f s (npt %.3f); 75 frames in %v",
				tr, start, asked, seek[0], k, want, idx.KeyframeSeconds(k), took)
			if math.Abs(seek[0]-want) > 0.001 {
				t.Errorf("-ss 10 showed first the picture at %.3f s, want the keyframe presented at or before npt %.3f, at %.3f s", seek[0], asked, want)
			}
			if span := seek[len(seek)-1] - seek[0]; span < 2.95 || span > 2.97 {
				t.Errorf("75 frames spanning %.3f s after the seek, want 2.96 s", span)
			}
			if took < 2*time.Second {
				t.Errorf("3 s of media after the seek arrived in %v: not real time", took)
			}
		})
	}
}

// lastPlayNPT returns the start of the npt Range of the last PLAY request
// in an ffmpeg trace log (its "Sending:" dumps of RTSP requests).
func lastPlayNPT(log string) (float64, bool) {
	npt, found := 0.0, false
	for _, req := range strings.Split(log, "Sending:")[1:] {
		req, _, _ = strings.Cut(req, "\n--")
		if !strings.HasPrefix(strings.TrimSpace(req), "PLAY ") {
			continue
		}
		if m := playNPTRe.FindStringSubmatch(req); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			npt, found = v, err == nil
		}
	}
	return npt, found
}

var playNPTRe = regexp.MustCompile(`(?m)^Range: npt=([0-9.]+)-`)

// gstRace: see vodnode's test of the same name (rtspsrc's PAUSE cut by
// its own CLOSE at EOS, posted as an error after a clean EOS; seen over
// UDP, and once over TCP in CI). The warning of rtspsrc's fallback from
// UDP to TCP (gst_rtspsrc_reconnect) is no error: with it, the race after
// a fallback was taken for a failure (CI, TestGStreamerFallsBackFromUDPToTCP).
func gstRace(out string) bool {
	var errs []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "gstrtspsrc.c(") && !strings.Contains(line, "gst_rtspsrc_reconnect") {
			errs = append(errs, line)
		}
	}
	for _, e := range errs {
		if !strings.Contains(e, "gst_rtspsrc_pause") && !strings.Contains(e, "gst_rtspsrc_try_send") {
			return false
		}
	}
	return len(errs) > 0 && strings.Contains(out, "Got EOS") && strings.Count(out, "(Received end-of-file)") == len(errs)
}

// gstPlay runs gst (gst-launch-1.0 -e) with an rtspsrc of properties src,
// the MPEG-TS depayloader, demuxer and H.264 parser into a fakesink of
// property sink, for at most limit: its output, how long it ran, whether
// limit ran out first, and its exit error.
func gstPlay(gst string, limit time.Duration, sink string, src ...string) (out string, took time.Duration, timedOut bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := append(append([]string{"-e", "rtspsrc"}, src...), "!", "rtpmp2tdepay", "!", "tsdemux", "!", "queue", "!", "h264parse", "!", "fakesink", sink)
	start := time.Now()
	b, err := exec.CommandContext(ctx, gst, args...).CombinedOutput()
	return string(b), time.Since(start), ctx.Err() != nil, err
}

// TestGStreamerThroughFrontDoor: gst-launch-1.0 (rtspsrc with the
// subscriber's credentials, following the 302; the MP2T depayloader)
// plays whole 20 s titles over TCP, synced to the clock, and over UDP; at
// the end it gets EOS, tears down and exits 0, and the manager holds no
// session or reservation afterwards.
func TestGStreamerThroughFrontDoor(t *testing.T) {
	t.Parallel()
	gst := needTool(t, "gst-launch-1.0")
	c := startPlaybackCluster(t, 2, 100_000_000, nil)
	adm := c.admin(t)
	var wg sync.WaitGroup
	for i, tc := range []struct{ proto, sink string }{{"tcp", "sync=true"}, {"udp", "sync=false"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, took, timedOut, err := gstPlay(gst, 40*time.Second, tc.sink, "location="+c.frontURL("", "", fmt.Sprintf("sample-00%d", i+2)),
				"user-id=demo", "user-pw=demo", "protocols="+tc.proto)
			switch {
			case timedOut:
				t.Errorf("%s: still running after %v:\n%s", tc.proto, took, out)
			case err != nil && !gstRace(out):
				t.Errorf("%s: %v after %v:\n%s", tc.proto, err, took, out)
			case took < 19*time.Second:
				t.Errorf("%s: a 20 s title played in %v", tc.proto, took)
			default:
				t.Logf("%s: exit %v after %v", tc.proto, err, took)
			}
		}()
	}
	wg.Wait()
	eventually(t, 15*time.Second, "no session or reservation left", func() bool {
		return len(sessions(t, adm)) == 0 && reservedBps(t, adm) == 0
	})
}

// TestVLCThroughFrontDoor: VLC (cvlc, as an unprivileged user: it
// refuses root) follows the front door's 302 over HTTP and records what it
// plays, progressive MPEG-TS and HLS; both decode. VLC's RTSP client is
// live555: Debian builds VLC with --disable-live555, so it is tested only
// where the module exists.
func TestVLCThroughFrontDoor(t *testing.T) {
	t.Parallel()
	vlc := needTool(t, "cvlc")
	c := startPlaybackCluster(t, 2, 100_000_000, nil)
	adm := c.admin(t)
	dir, err := os.MkdirTemp("", "vlc-e2e")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, vlc, append([]string{"-I", "dummy"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_RUNTIME_DIR="+dir) // PulseAudio's runtime directory too (else /tmp/pulse-*, left behind)
		if os.Getuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	front := c.manager.HTTPAddr()
	for _, tc := range []struct{ name, url string }{
		{"progressive", "http://demo:demo@" + front + "/vod/sample-014.ts"},
		{"hls", "http://demo:demo@" + front + "/vod/sample-015/index.m3u8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := filepath.Join(dir, tc.name+".ts")
			out := run(tc.url, "--sout", "#std{access=file,mux=ts,dst="+rec+"}", "--run-time", "6", "vlc://quit")
			frames := countVideoFrames(t, rec)
			t.Logf("VLC %s through the front door: %d frames recorded", tc.name, frames)
			if frames < 100 {
				t.Errorf("VLC %s: %d frames\n%s", tc.name, frames, out)
			}
			found := false
			for _, s := range sessions(t, adm) {
				found = found || (s.Protocol == "http" && s.User == "demo" && strings.Contains(tc.url, "/"+s.TitleId))
			}
			if !found {
				t.Errorf("VLC %s: no HTTP session of demo in the manager's table", tc.name)
			}
		})
	}
	t.Run("rtsp", func(t *testing.T) {
		if !strings.Contains(run("--list"), "live555") {
			t.Skip("this VLC has no RTSP client: it is built without live555 (Debian: --disable-live555); VLC plays over HTTP above")
		}
		rec := filepath.Join(dir, "rtsp.ts")
		out := run(c.frontURL("demo", "demo", "sample-016"), "--sout", "#std{access=file,mux=ts,dst="+rec+"}", "--run-time", "4", "vlc://quit")
		if frames := countVideoFrames(t, rec); frames < 50 {
			t.Errorf("VLC RTSP: %d frames\n%s", frames, out)
		}
	})
}

// countVideoFrames returns the video frames ffprobe decodes in a file.
func countVideoFrames(t *testing.T, path string) int {
	t.Helper()
	out, err := exec.Command(needTool(t, "ffprobe"), "-v", "quiet", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Logf("ffprobe %s: %v", path, err)
		return 0
	}
	f := strings.Fields(string(out)) // a count per program
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// TestVCRThroughFrontDoor: a scripted client redirected by the front door
// plays, pauses (no media flows), resumes where it stopped, seeks, plays
// at Scale 4 (echoed), and tears down: the manager releases the session
// and its reservation at once.
func TestVCRThroughFrontDoor(t *testing.T) {
	t.Parallel()
	c := startPlaybackCluster(t, 1, 100_000_000, nil)
	adm := c.admin(t)
	loc := redirect(t, c, "sample-017")
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	r := dialRTSPC(t, u.Host, "", "")
	res := r.do("SETUP", loc+"/trackID=0", "Transport", "MP2T/RTP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP at the node: %d", res.StatusCode)
	}
	id := sessionOf(res)
	play := func(hdr ...string) *base.Response {
		t.Helper()
		res := r.do("PLAY", loc+"/", append([]string{"Session", id}, hdr...)...)
		if res.StatusCode != 200 {
			t.Fatalf("PLAY %v: %d", hdr, res.StatusCode)
		}
		return res
	}
	play("Range", "npt=0.000-")
	if n, _ := r.rtpFor(time.Second); n == 0 {
		t.Fatal("no media")
	}
	res = r.do("PAUSE", loc+"/", "Session", id)
	if res.StatusCode != 200 {
		t.Fatalf("PAUSE: %d", res.StatusCode)
	}
	// what was sent before the PAUSE answer came with it
	if n, _ := r.rtpFor(700 * time.Millisecond); n != 0 {
		t.Fatalf("%d RTP packets while paused", n)
	}
	res = play()
	ri := strings.Join(res.Header["RTP-Info"], "")
	n, _ := r.rtpFor(300 * time.Millisecond)
	if n == 0 || !strings.Contains(ri, "seq=") {
		t.Fatalf("resume: %d packets, RTP-Info %q", n, ri)
	}
	if at := nptStart(res); at < 0.6 || at > 1.6 {
		t.Errorf("resumed at npt %.3f after about 1 s of play", at)
	}
	if rng := play("Range", "npt=12.5-").Header["Range"]; len(rng) != 1 || rng[0] != "npt=12.000-" {
		t.Errorf("seek to 12.5 s: Range %v, want the keyframe at 12 s", rng)
	}
	if sc := play("Scale", "4").Header["Scale"]; len(sc) != 1 || sc[0] != "4.000" {
		t.Errorf("Scale 4 answered Scale %v", sc)
	}
	if n, _ := r.rtpFor(500 * time.Millisecond); n == 0 {
		t.Error("no pictures at Scale 4")
	}
	if len(sessions(t, adm)) != 1 || reservedBps(t, adm) == 0 {
		t.Fatalf("the manager holds %d sessions, %d bit/s", len(sessions(t, adm)), reservedBps(t, adm))
	}
	if res := r.do("TEARDOWN", loc+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %d", res.StatusCode)
	}
	eventually(t, 10*time.Second, "the session and its reservation released", func() bool {
		return len(sessions(t, adm)) == 0 && reservedBps(t, adm) == 0
	})
}

// TestGStreamerFallsBackFromUDPToTCP: rtspsrc that receives no RTP over
// UDP (timeout=1000: after 1 ms without a packet, as after its 5 s
// default behind a firewall that drops UDP) tears its session down and
// asks the node's URL it was redirected to again, over TCP. The node
// sends it back to the front door (its token is spent) with a
// re-admission ticket, and the front door admits it anew: the title plays
// to its end over TCP, whether its credentials were given apart
// (user-id, user-pw) or in the URL, which rtspsrc forgets at a redirect.
// It was refused 401 Unauthorized, and the player stopped.
func TestGStreamerFallsBackFromUDPToTCP(t *testing.T) {
	t.Parallel()
	gst := needTool(t, "gst-launch-1.0")
	c := startPlaybackCluster(t, 1, 100_000_000, nil)
	adm := c.admin(t)
	var wg sync.WaitGroup
	for _, tc := range []struct{ name, title string }{{"credentials apart", "sample-007"}, {"credentials in the URL", "sample-008"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := []string{"location=" + c.frontURL("", "", tc.title), "user-id=demo", "user-pw=demo"}
			if tc.name == "credentials in the URL" {
				src = []string{"location=" + c.frontURL("demo", "demo", tc.title)}
			}
			out, took, timedOut, err := gstPlay(gst, 60*time.Second, "sync=false", append(src, "protocols=udp+tcp", "timeout=1000")...)
			switch {
			case timedOut:
				t.Errorf("%s: still running after %v:\n%s", tc.name, took, out)
			case !strings.Contains(out, "Retrying using a tcp connection"):
				t.Errorf("%s: rtspsrc did not fall back to TCP (exit %v):\n%s", tc.name, err, out)
			case strings.Contains(out, "Unauthorized"):
				t.Errorf("%s: refused after the fallback:\n%s", tc.name, out)
			case err != nil && !gstRace(out), !strings.Contains(out, "Got EOS"):
				t.Errorf("%s: exit %v after %v, want the title played to its end:\n%s", tc.name, err, took, out)
			}
		}()
	}
	wg.Wait()
	eventually(t, 15*time.Second, "no session or reservation left", func() bool {
		return len(sessions(t, adm)) == 0 && reservedBps(t, adm) == 0
	})
}
