package vodnode

import (
	"net/http"
	"testing"
	"time"
)

// An HTTP viewer that was sent no byte of its title yet (an HLS player
// that has its playlist and has not asked for a segment yet, a
// download that asked HEAD first) and whose title's fill then fails with
// bytes of the title on disk is not ended: those bytes are still served,
// as to a viewer whose request is in progress (hu2 of
// TestHLSTitleUnavailableRetryAfter), so its next request plays them.
func TestHTTPViewerBetweenRequestsPlaysTheBytesOfAFailedFill(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.FillRetryFor = 300 * time.Millisecond })
	data := o.titles["sample-005"]
	o.failAt.Store(int64(len(data)/4) / 188 * 188)

	headTok := mint(t, "between-head", "sample-005", "node-1", "", time.Minute)
	res, err := http.Head(httpURL(n, headTok, "sample-005.ts"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("HEAD: %d", res.StatusCode)
	}
	hlsTok := mint(t, "between-hls", "sample-005", "node-1", "", time.Minute)
	if res, b := get(t, httpURL(n, hlsTok, "sample-005/index.m3u8")); res.StatusCode != http.StatusOK {
		t.Fatalf("playlist: %d %q", res.StatusCode, b)
	}
	waitFor(t, 10*time.Second, "the fill to fail", func() bool { return n.store.FillsFailed()["origin"] == 1 })
	time.Sleep(200 * time.Millisecond) // the failure's consequences, if any
	if res, b := get(t, httpURL(n, hlsTok, "sample-005/seg-0.ts")); res.StatusCode != http.StatusOK {
		t.Errorf("segment 0, on disk, after the fill failed: %d %q, want 200", res.StatusCode, b)
	}
	if res, b := get(t, httpURL(n, headTok, "sample-005.ts"), "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Errorf("first packet, on disk, after the fill failed: %d %q, want 206", res.StatusCode, b)
	}
}
