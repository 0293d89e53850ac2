package vodnode

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// mpv resuming 12 s into a 20 s title whose fill is held at 200 kB (a
// film resumed far into it, the fill far behind): mpv seeks by byte
// ranges, and the bytes past the seek point come from successive origin
// reads, each opened where the viewer reached the previous one's end
// (here 100 kB each), until mpv has played to where it was asked to stop.
// The first read's end was where such a range waited for the fill (with
// the fill at the title's bitrate, mpv took 28 s here, then 19 s: its
// start, probes and five seconds of play).
func TestMpvResumesFarAheadOfAFillOverHTTP(t *testing.T) {
	if _, err := exec.LookPath("mpv"); err != nil {
		t.Skip("mpv not installed")
	}
	aheadBounds(t, 100_000)
	o := heldOrigin(t, 200_000) // the fill never reaches the seek point
	n := startNode(t, startOrigin(t, o), withHTTP)
	const title = "sample-001"
	data := o.titles[title]
	url := httpURL(n, mint(t, "ahead-mpv", title, "node-1", "", time.Minute), title+".ts")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "mpv", "--no-config", "--vo=null", "--ao=null", "--start=12", "--length=5",
		"--term-status-msg=played ${=playback-time}", url).CombinedOutput()
	if err != nil {
		t.Fatalf("mpv: %v\n%s", err, out)
	}
	played := 0.0
	for _, m := range regexp.MustCompile(`played ([0-9.]+)`).FindAllSubmatch(out, -1) {
		if v, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			played = max(played, v)
		}
	}
	if played < 16 {
		t.Fatalf("mpv played to %.1f s, want past 16 s (from 12 s, for 5 s)\n%s", played, out)
	}
	// Range reads past the seek point (before the last 250 kB, which mpv
	// reads first for the duration) that begin where another ended.
	var ranges []int64 // the offsets of the range reads (no_wait transfers), in order
	for _, off := range o.fetchOffsets(title) {
		if off > 0 {
			ranges = append(ranges, off)
		}
	}
	lens := o.lengths()
	continued := 0
	for i, off := range ranges {
		if i < len(lens) && off < int64(len(data)-aheadTail) && slices.Contains(ranges, off+lens[i]) {
			continued++
		}
	}
	if continued < 2 {
		t.Errorf("origin range reads at offsets %v, lengths %v: %d past the seek point followed by another where it ended, want 2 or more", ranges, lens, continued)
	}
	waitFor(t, 10*time.Second, "the node's origin reads closed", func() bool { return aheadOpen(n) == 0 })
	t.Logf("mpv played to %.1f s; origin range reads at %v, lengths %v, %d bytes", played, ranges, lens, n.Stats().OriginRangeBytes)
}
