package vodnode

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// longGOPTitle encodes a 30 s title whose keyframes come every 2 s for
// its first 12 s, then 10 s apart (at 12 and 22 s): HLS segments of 4, 4,
// 4, 10 and 8 s. The first three, all a fill held after them shows, fit
// the usual target duration of 8 s; the fourth does not.
func longGOPTitle(t *testing.T) []byte {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "longgop.ts")
	b, err := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25",
		"-f", "lavfi", "-i", "sine=sample_rate=48000", "-t", "30",
		"-c:v", "libx264", "-preset", "ultrafast", "-g", "1000", "-keyint_min", "1000", "-sc_threshold", "0",
		"-force_key_frames", "0,2,4,6,8,10,12,22", "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", out).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var (
	targetTag = regexp.MustCompile(`(?m)^#EXT-X-TARGETDURATION:(\d+)$`)
	extinfTag = regexp.MustCompile(`(?m)^#EXTINF:([0-9.]+),`)
)

// checkTarget returns playlist pl's EXT-X-TARGETDURATION after checking
// that it holds each EXTINF rounded to the nearest integer (RFC 8216
// §4.3.3.1).
func checkTarget(t *testing.T, what, pl string) int {
	t.Helper()
	m := targetTag.FindStringSubmatch(pl)
	if m == nil {
		t.Fatalf("%s: no EXT-X-TARGETDURATION:\n%s", what, pl)
	}
	target, _ := strconv.Atoi(m[1])
	for _, e := range extinfTag.FindAllStringSubmatch(pl, -1) {
		d, _ := strconv.ParseFloat(e[1], 64)
		if int(math.Round(d)) > target {
			t.Errorf("%s: a segment of %s s, rounded %v, past EXT-X-TARGETDURATION:%d:\n%s", what, e[1], math.Round(d), target, pl)
		}
	}
	return target
}

// TestHLSTargetDurationOfLongGOPs: a title whose keyframes come 10 s
// apart after its first 12 s gets an EXT-X-TARGETDURATION that holds its
// 10 s segment (RFC 8216 §4.3.3.1) from the first playlist, while the
// fill, held after the 4 s segments, shows none of it, and keeps it in
// the session's reload once the title is complete (§6.2.1: it MUST NOT
// change); a new viewer's VOD playlist declares it too. The first
// playlist declared 8 and its reload 10: hls.js and Apple's players stall
// on or refuse such a playlist.
func TestHLSTargetDurationOfLongGOPs(t *testing.T) {
	t.Parallel()
	data := longGOPTitle(t)
	x, err := tsindex.BuildFrom(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	segs := segments(x, true)
	var durs []float64
	for _, s := range segs {
		durs = append(durs, math.Round(s.dur*10)/10)
	}
	if len(segs) != 5 || segs[3].dur < 9.5 || segs[2].dur > 8 {
		t.Fatalf("the long-GOP title's segments: %v s, want 4, 4, 4, 10, 8", durs)
	}
	o := heldOrigin(t, segs[3].start+8*tsindex.PacketSize) // three segments cut, the fourth's keyframe indexed
	const title = "longgop-001"
	o.titles[title] = data
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "hls-longgop", title, "node-1", "", time.Minute), title+"/index.m3u8")
	res, b := get(t, url)
	first := string(b)
	if res.StatusCode != 200 || !strings.Contains(first, "#EXT-X-PLAYLIST-TYPE:EVENT") || strings.Count(first, "#EXTINF") != 3 {
		t.Fatalf("the first playlist of the title held after its three 4 s segments (%d):\n%s", res.StatusCode, first)
	}
	target := checkTarget(t, "the first playlist", first)
	if target < 10 {
		t.Errorf("the first playlist declares EXT-X-TARGETDURATION:%d; the title has a segment of %.3f s", target, segs[3].dur)
	}
	res, b = get(t, url)
	if got := checkTarget(t, "a reload while held", string(b)); res.StatusCode != 200 || got != target {
		t.Errorf("a reload while the fill is held (%d): EXT-X-TARGETDURATION:%d, the first said %d", res.StatusCode, got, target)
	}
	o.unhold()
	waitComplete(t, n, title)
	res, b = get(t, url)
	whole := string(b)
	if res.StatusCode != 200 || !strings.Contains(whole, "#EXT-X-ENDLIST") || strings.Count(whole, "#EXTINF") != len(segs) {
		t.Fatalf("the session's playlist once the title is complete (%d):\n%s", res.StatusCode, whole)
	}
	if got := checkTarget(t, "the session's playlist once complete", whole); got != target {
		t.Errorf("the session's playlist once complete: EXT-X-TARGETDURATION:%d, its first said %d", got, target)
	}
	res, b = get(t, httpURL(n, mint(t, "hls-longgop-vod", title, "node-1", "", time.Minute), title+"/index.m3u8"))
	vod := string(b)
	if res.StatusCode != 200 || !strings.Contains(vod, "#EXT-X-PLAYLIST-TYPE:VOD") {
		t.Fatalf("a new viewer's playlist of the complete title (%d):\n%s", res.StatusCode, vod)
	}
	if got := checkTarget(t, "a new viewer's VOD playlist", vod); got != target {
		t.Errorf("a new viewer's VOD playlist: EXT-X-TARGETDURATION:%d, the filling title's said %d", got, target)
	}
	// A player reads the playlist: ffprobe's HLS demuxer gives its
	// duration, the EXTINFs summed, and the title's streams.
	if _, err := exec.LookPath("ffprobe"); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "format=duration:stream=codec_type",
		"-of", "flat", httpURL(n, mint(t, "hls-longgop-probe", title, "node-1", "", time.Minute), title+"/index.m3u8")).CombinedOutput()
	m := regexp.MustCompile(`format\.duration="([0-9.]+)"`).FindSubmatch(out)
	if err != nil || m == nil || !strings.Contains(string(out), `codec_type="video"`) {
		t.Fatalf("ffprobe of the VOD playlist: %v\n%s", err, out)
	}
	if d, _ := strconv.ParseFloat(string(m[1]), 64); math.Abs(d-x.Duration()) > 0.5 {
		t.Errorf("ffprobe of the VOD playlist: duration %s s, the title's %.3f s\n%s", m[1], x.Duration(), out)
	}
}
