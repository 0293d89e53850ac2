package vodnode

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// An HLS request whose title has no bytes for it (the fill failed: the
// origin refuses the title before its first byte, or fails for good past
// the last segment filled) is 503 "title unavailable" with Retry-After 5,
// as the node's other 503s (draining, no capacity), for the playlist and
// for a segment alike.
func TestHLSTitleUnavailableRetryAfter(t *testing.T) {
	t.Parallel()
	o := newFakeOrigin(t)
	o.replaced.Store(true) // no byte of any title
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.FillRetryFor = 300 * time.Millisecond })
	check := func(what, url string) {
		t.Helper()
		res, b := get(t, url)
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "title unavailable") {
			t.Fatalf("%s: %d %q, want 503 title unavailable", what, res.StatusCode, b)
		}
		if ra := res.Header.Get("Retry-After"); ra != "5" {
			t.Errorf("%s: 503 with Retry-After %q, want 5 (as the node's other 503s)", what, ra)
		}
	}
	check("playlist of a title whose fill failed before its first byte",
		httpURL(n, mint(t, "hu1", "sample-004", "node-1", "", time.Minute), "sample-004/index.m3u8"))

	// A fill that fails for good a quarter into the title: the segments
	// before are served, one past them is unavailable.
	o.replaced.Store(false)
	data := o.titles["sample-005"]
	o.failAt.Store(int64(len(data)/4) / 188 * 188)
	tok := mint(t, "hu2", "sample-005", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "sample-005.ts"), "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("first packet: %d", res.StatusCode)
	}
	waitFor(t, 10*time.Second, "the fill to fail", func() bool { return n.store.FillsFailed()["origin"] == 1 })
	if res, _ := get(t, httpURL(n, tok, "sample-005/seg-0.ts")); res.StatusCode != http.StatusOK {
		t.Fatalf("segment 0 of the bytes filled: %d", res.StatusCode)
	}
	// (one the title has, 12 to 16 s: one past any it can have is 404)
	check("a segment past the bytes of a failed fill", httpURL(n, tok, "sample-005/seg-3.ts"))
}
