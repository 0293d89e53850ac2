package main

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "vodcluster/proto/vodcluster/v1"
)

// TestFFmpegSeeksProgressiveHTTPWithCredentials: ffprobe and ffmpeg given
// the front door's progressive URL with the subscriber's credentials
// (http://demo:demo@front/vod/<title>.ts, as the README shows) seek in
// it: ffprobe reads the title's end for its duration, ffmpeg -ss 15
// starts 15 s in. Each of those reads asks the URL it was given again
// with a Range, without credentials (ffmpeg forgets them at the
// redirect), and its retry after the front door's 401 asked from byte 0:
// the duration came out about 5 s for a 20 s title and -ss decoded no
// frame. The front door's 302 may now be reused by its player for the
// token's life (Cache-Control: max-age), so those reads go to the node.
func TestFFmpegSeeksProgressiveHTTPWithCredentials(t *testing.T) {
	t.Parallel()
	fp := needTool(t, "ffprobe")
	c := startTestCluster(t, 1, 100_000_000, nil)
	const title = "sample-007"
	res, err := c.admin(t).ListTitles(context.Background(), &v1.ListTitlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, ti := range res.GetTitles() {
		if ti.GetId() == title {
			want = ti.GetDurationS()
		}
	}
	if want < 19 {
		t.Fatalf("%s: catalog duration %.3f s, want a 20 s sample", title, want)
	}
	url := fmt.Sprintf("http://demo:demo@%s/vod/%s.ts", c.manager.HTTPAddr(), title)

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, fp, "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", url).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe %s: %v\n%s", url, err, out)
	}
	got, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || math.Abs(got-want) > 0.5 {
		t.Errorf("ffprobe's duration of the progressive title: %q, want about %.3f s", out, want)
	}

	p := ffmpegRun(t, 3, "-ss", "15", "-i", url)
	if p.Err != nil || p.Frames < 70 {
		t.Fatalf("ffmpeg -ss 15 over HTTP with credentials: %v, %d frames, want 3 s of video (75)\n%s", p.Err, p.Frames, p.Out)
	}
}
