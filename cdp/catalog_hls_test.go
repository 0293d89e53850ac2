package cdp

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The catalog gives each title's longest HLS segment as a node cuts it
// (Title.HLSSegmentMaxS, in its wire form too): about 4 s for the
// samples, whose keyframes come every 2 s, 10 s for a title encoded with
// keyframes 10 s apart, which a node's playlists must declare as their
// target duration from the first (they declared 8). A reload that scans
// no file keeps it.
func TestLoadCatalogLongestHLSSegment(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "25",
		"-c:v", "libx264", "-preset", "ultrafast", "-g", "250", "-keyint_min", "250", "-sc_threshold", "0",
		"-f", "mpegts", filepath.Join(dir, "long-gop.ts")).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	if err := os.WriteFile(filepath.Join(dir, "short-gop.ts"), readClip(t, "clip-a.ts"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := LoadCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	check := func(c *Catalog, when string) {
		t.Helper()
		for id, want := range map[string]float64{"long-gop": 10, "short-gop": 4} {
			ti := mustTitle(t, c, id)
			if math.Abs(ti.HLSSegmentMaxS-want) > 0.5 {
				t.Errorf("%s: %s: longest HLS segment %.3f s, want about %v", when, id, ti.HLSSegmentMaxS, want)
			}
			if got := ti.Proto().GetHlsSegmentMaxS(); got != ti.HLSSegmentMaxS {
				t.Errorf("%s: %s: hls_segment_max_s %v in its wire form, %v in the catalog", when, id, got, ti.HLSSegmentMaxS)
			}
		}
	}
	check(cat, "loaded")
	again, scanned, err := loadCatalog(dir, cat, nil)
	if err != nil || scanned != 0 {
		t.Fatalf("load of the unchanged directory: %d files scanned, %v; want none", scanned, err)
	}
	check(again, "loaded again")
}
