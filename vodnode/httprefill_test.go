package vodnode

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A progressive-download viewer whose title's fill failed a quarter in
// (the origin away longer than fill_retry_for) asks for the rest once the
// origin is back: its session fills the title again, from the partial
// the failed fill left, and serves it. It was bound to the failed fill
// for good: 503 with Retry-After at every request, which no retry mended.
func TestHTTPSessionRefillsAfterAFailedFill(t *testing.T) {
	o, n, url, data, cut, first, b := cutFillSession(t, "refill")
	if first != http.StatusOK || int64(len(b)) > cut || !bytes.Equal(b, data[:len(b)]) {
		t.Fatalf("first GET: %d, %d bytes, want 200 and at most the %d bytes the origin sent, the title's", first, len(b), cut)
	}
	if got := len(n.store.Partials()); got != 1 {
		t.Fatalf("%d partials after the failed fill, want 1", got)
	}
	o.failAt.Store(0) // the origin is back, whole
	res, b := get(t, url, "Range", fmt.Sprintf("bytes=%d-", cut))
	if res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[cut:]) {
		t.Fatalf("the rest once the origin is back: %d, %d bytes (%q), want 206 and the title's last %d bytes",
			res.StatusCode, len(b), b[:min(len(b), 120)], int64(len(data))-cut)
	}
	if got := len(n.store.Partials()); got != 0 {
		t.Fatalf("%d partials once the title is whole, want 0 (the new fill resumed it)", got)
	}
}

// A session's title replaced at the origin, after its fill failed, by a
// file of the same size and bitrate (other bytes: another version) is
// not filled again for it: its next bytes would be the new version's
// after the old one's it has. It was (the check compared size and
// bitrate only).
func TestHTTPSessionDoesNotRefillAnotherVersion(t *testing.T) {
	o, n, url, data, cut, first, b := cutFillSession(t, "refill-other")
	if first != http.StatusOK || !bytes.Equal(b, data[:len(b)]) {
		t.Fatalf("first GET: %d, %d bytes", first, len(b))
	}
	other := bytes.Clone(data)
	for p := cut; p+188 <= int64(len(other)); p += 188 {
		other[p+187] ^= 0x55 // the same size and duration, other bytes
	}
	o.replace("sample-005", other)
	o.failAt.Store(0)
	// The session asks for the rest: its fill again, from the node's
	// catalog as it was, fails as replaced, which has the node read the
	// catalog again; asked once more, the title there is the new version.
	rest := func() (int, []byte) {
		res, b := get(t, url, "Range", fmt.Sprintf("bytes=%d-", cut))
		return res.StatusCode, b
	}
	for i := range 2 {
		if code, b := rest(); code != http.StatusServiceUnavailable || bytes.Contains(b, other[cut:cut+188]) {
			t.Fatalf("request %d for the rest after the title was replaced: %d, %d bytes; want 503 (the session's bytes are the old version's)", i+1, code, len(b))
		}
		waitFor(t, 10*time.Second, "a fill of the title to fail as replaced", func() bool { return n.store.FillsFailed()["replaced"] >= 1 })
	}
}

// cutFillSession starts a node whose origin sends sample-005's first
// quarter (cut bytes) and then fails, and a progressive download of it by
// session sid: it returns once the fill has failed (fill_retry_for
// 300 ms), with the download's URL, the title's bytes, the first GET's
// status and body.
func cutFillSession(t *testing.T, sid string) (o *fakeOrigin, n *Node, url string, data []byte, cut int64, first int, body []byte) {
	t.Helper()
	o = newFakeOrigin(t)
	data = o.titles["sample-005"]
	cut = int64(len(data)/4) / 188 * 188
	o.failAt.Store(cut)
	n = startNode(t, startOrigin(t, o), func(n *Node) {
		withHTTP(n)
		n.FillRetryFor = 300 * time.Millisecond
	})
	url = httpURL(n, mint(t, sid, "sample-005", "node-1", "", 10*time.Minute), "sample-005.ts")
	res, body := get(t, url)
	waitFor(t, 10*time.Second, "the fill to fail", func() bool { return n.store.FillsFailed()["origin"] == 1 })
	return o, n, url, data, cut, res.StatusCode, body
}
