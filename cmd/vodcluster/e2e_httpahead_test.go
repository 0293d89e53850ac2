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
)

// TestFFprobeProgressiveOfATitleBeingFilled: ffprobe given the front
// door's progressive URL of a title no node holds reads the title's last
// 250 kB for its duration while the title is being filled: that range is
// read from the origin (vodnode_origin_range_bytes_total), not awaited
// until the fill reaches the end (mpv, ffplay and ffprobe showed no
// picture until the whole title was on the node).
func TestFFprobeProgressiveOfATitleBeingFilled(t *testing.T) {
	t.Parallel()
	fp := needTool(t, "ffprobe")
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.OriginRateBps = 1_000_000 })
	const title = "sample-009"
	url := fmt.Sprintf("http://demo:demo@%s/vod/%s.ts", c.manager.HTTPAddr(), title)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, fp, "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", url).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe %s: %v\n%s", url, err, out)
	}
	if got, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err != nil || math.Abs(got-20) > 0.5 {
		t.Errorf("ffprobe's duration of the title being filled: %q, want about 20 s", out)
	}
	if got := c.nodes[0].Stats().OriginRangeBytes; got < 100_000 {
		t.Errorf("the node read %d bytes of ranges from the origin, want the title's tail (250 kB) that ffprobe asked for", got)
	}
}
