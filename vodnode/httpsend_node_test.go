package vodnode

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The node's own HTTP server (plain HTTP, a real TCP connection) sends a
// progressive download and HLS segments with sendfile: whole, by ranges,
// and answers HEAD with the header alone, each with its Content-Type and a
// Content-Length that is the body's (the header is flushed before the
// first sendfile, so net/http does not sniff it), and no send is copied
// instead (vodnode_http_send_fallbacks_total stays 0 for every cause: a
// file handed to the connection in a form its sendfile does not take
// would count "connection").
func TestHTTPNodeSendsWithSendfile(t *testing.T) {
	t.Parallel()
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	tok := mint(t, "nsf", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, tok, "sample-001.ts"), "Range", "bytes=0-187"); res.StatusCode != http.StatusPartialContent {
		t.Fatalf("first packet: %d", res.StatusCode)
	}
	n.mu.Lock()
	hs := n.httpSessions["nsf"]
	n.mu.Unlock()
	waitFor(t, 10*time.Second, "fill", func() bool { return hs.t().View().Complete })
	hs.pacing.lim.Store(nil) // unpaced: the sends, not the pace, are checked

	// check asks url with method and the header hdr, and checks the
	// status, Content-Type and that Content-Length is the body's.
	check := func(method, url string, status int, hdr ...string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s %v: %v", method, url, hdr, err)
		}
		defer res.Body.Close()
		var body bytes.Buffer
		if _, err := body.ReadFrom(res.Body); err != nil {
			t.Fatalf("%s %s %v: reading the body: %v", method, url, hdr, err)
		}
		if res.StatusCode != status {
			t.Fatalf("%s %s %v: %d, want %d", method, url, hdr, res.StatusCode, status)
		}
		if ct := res.Header.Get("Content-Type"); ct != "video/mp2t" {
			t.Errorf("%s %s %v: Content-Type %q", method, url, hdr, ct)
		}
		cl, err := strconv.ParseInt(res.Header.Get("Content-Length"), 10, 64)
		if err != nil || cl <= 0 {
			t.Fatalf("%s %s %v: Content-Length %q", method, url, hdr, res.Header.Get("Content-Length"))
		}
		if want := map[bool]int64{true: 0, false: cl}[method == http.MethodHead]; int64(body.Len()) != want {
			t.Errorf("%s %s %v: %d bytes of body, Content-Length %d", method, url, hdr, body.Len(), cl)
		}
		return body.Bytes()
	}
	title := httpURL(n, tok, "sample-001.ts")
	if b := check(http.MethodGet, title, http.StatusOK); !bytes.Equal(b, data) {
		t.Errorf("progressive: %d bytes, not the title's %d", len(b), len(data))
	}
	if b := check(http.MethodGet, title, http.StatusPartialContent, "Range", "bytes=1000-200000"); !bytes.Equal(b, data[1000:200001]) {
		t.Errorf("a range: %d bytes, not the title's", len(b))
	}
	check(http.MethodHead, title, http.StatusOK)

	_, pl := get(t, httpURL(n, tok, "sample-001/index.m3u8"))
	segs := strings.Count(string(pl), "#EXTINF:")
	if segs < 2 {
		t.Fatalf("playlist:\n%s", pl)
	}
	for i := range segs {
		url := httpURL(n, tok, fmt.Sprintf("sample-001/seg-%d.ts", i))
		seg := check(http.MethodGet, url, http.StatusOK)
		if len(seg) < 188 || seg[0] != 0x47 {
			t.Fatalf("segment %d: %d bytes", i, len(seg))
		}
		if part := check(http.MethodGet, url, http.StatusPartialContent, "Range", "bytes=100-"+strconv.Itoa(len(seg)-2)); !bytes.Equal(part, seg[100:len(seg)-1]) {
			t.Errorf("a range of segment %d: not its bytes", i)
		}
		check(http.MethodHead, url, http.StatusOK)
	}
	for cause, c := range n.sendFallbacks() {
		if c != 0 {
			t.Errorf("%d sends over plain HTTP copied instead of sent with sendfile, cause %s", c, cause)
		}
	}
	if e := n.send.diskErrors.Load(); e != 0 {
		t.Errorf("%d disk read errors", e)
	}
}
