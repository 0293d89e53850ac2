package vodnode

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"vodcluster/vodnode/store"
)

// TestHLSJoinsAFillFromTheStart: ffmpeg playing the HLS playlist of a
// title whose fill is four segments in plays the title from its first
// frame to its last. A playlist without EXT-X-ENDLIST is live to
// players, which start three segments before its end: given every
// segment filled so far, ffmpeg (and VLC) started at the fill's edge and
// the viewer missed the title's beginning.
func TestHLSJoinsAFillFromTheStart(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed")
	}
	o := newFakeOrigin(t)
	o.rate = 100 << 10 // bytes/s: the 1.5 MB title fills in about 15 s
	n := startNode(t, startOrigin(t, o), withHTTP)
	const title = "sample-002"
	want := bytesFrames(t, "0:v", o.titles[title])
	if err := n.store.Prefetch(n.ctx, title); err != nil {
		t.Fatal(err)
	}
	status := func() (st store.Status) {
		for _, s := range n.store.Titles() {
			if s.ID == title {
				st = s
			}
		}
		return st
	}
	// four of the five segments (16 of 20 s), the last still filling
	waitFor(t, 30*time.Second, "the fill four segments in", func() bool {
		st := status()
		return st.Size > 0 && st.Stored*100 >= st.Size*82
	})
	url := httpURL(n, mint(t, "hls-join", title, "node-1", "", time.Minute), title+"/index.m3u8")
	res, b := get(t, url)
	if res.StatusCode != 200 || !strings.Contains(string(b), "#EXT-X-PLAYLIST-TYPE:EVENT") || strings.Contains(string(b), "#EXT-X-ENDLIST") {
		t.Fatalf("the title completed before the viewer came (%d):\n%s", res.StatusCode, b)
	}
	if got := decodedFrames(t, "0:v", "-i", url); got != want {
		t.Errorf("ffmpeg joining the fill over HLS: %d video frames, the title has %d", got, want)
	}
}
