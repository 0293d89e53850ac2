package vodnode

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHLSEventPlaylistListsAheadOfTheFill: the first playlist of a title
// whose fill has just started lists the segments eventShown gives a new
// viewer (three), waiting for the fill to reach them (it runs faster than
// play), not only the one filled when the playlist was asked for. Players
// that reload a live playlist after its target duration (8 s: GStreamer's
// hlsdemux, VLC) played that one segment and waited for the reload:
// playbin started a title being filled 8.7 s late, VLC stalled 8 s.
func TestHLSEventPlaylistListsAheadOfTheFill(t *testing.T) {
	t.Parallel()
	o := newFakeOrigin(t)
	o.rate = 700 << 10 // bytes/s: a segment (~300 KB) every ~0.4 s, the 1.5 MB title in ~2 s
	n := startNode(t, startOrigin(t, o), withHTTP)
	const title = "sample-002"
	if err := n.store.Prefetch(n.ctx, title); err != nil {
		t.Fatal(err)
	}
	url := httpURL(n, mint(t, "hls-ahead", title, "node-1", "", time.Minute), title+"/index.m3u8")
	start := time.Now()
	res, b := get(t, url)
	took := time.Since(start)
	pl := string(b)
	if res.StatusCode != 200 {
		t.Fatalf("playlist: %d\n%s", res.StatusCode, pl)
	}
	if strings.Contains(pl, "#EXT-X-ENDLIST") {
		t.Skipf("the fill completed before the first playlist (%v): the machine is too slow for this test", took)
	}
	if got := strings.Count(pl, "#EXTINF"); got < eventAhead {
		t.Errorf("the first playlist of a title being filled lists %d segments after %v, want %d:\n%s", got, took, eventAhead, pl)
	}
}

// TestGStreamerHLSStartsAFillAtOnce: GStreamer's playbin (hlsdemux, its
// buffering) plays the HLS playlist of a title whose fill has just
// started, to a clock-synced sink, to its end. Given a first playlist of
// one segment, it played that segment's 4 s and then waited to reload
// the playlist a target duration (8 s) later: 29 s in all for the 20 s
// title, about 23 s since (logged; the time is not asserted, a loaded
// machine stretches it: TestHLSEventPlaylistListsAheadOfTheFill checks
// the playlist).
func TestGStreamerHLSStartsAFillAtOnce(t *testing.T) {
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		t.Skip("gst-launch-1.0 not installed")
	}
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	o.rate = 700 << 10 // bytes/s: the 1.5 MB title fills in about 2 s, many times faster than play
	n := startNode(t, startOrigin(t, o), withHTTP)
	const title = "sample-003"
	if err := n.store.Prefetch(n.ctx, title); err != nil {
		t.Fatal(err)
	}
	url := httpURL(n, mint(t, "gst-hls-fill", title, "node-1", "", time.Minute), title+"/index.m3u8")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	b, err := exec.CommandContext(ctx, "gst-launch-1.0", "playbin", "uri="+url,
		"video-sink=fakesink sync=true", "audio-sink=fakesink sync=true").CombinedOutput()
	took, out := time.Since(start), string(b)
	if err != nil || !strings.Contains(out, "Got EOS") || strings.Contains(out, "ERROR") {
		t.Fatalf("gst-launch-1.0 playbin after %v: %v\n%s", took, err, out)
	}
	t.Logf("playbin played the 20 s title being filled in %v", took)
}
