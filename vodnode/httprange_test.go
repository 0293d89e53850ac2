package vodnode

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/byterange"
)

func TestCleanRange(t *testing.T) {
	for v, want := range map[string]string{
		"Bytes = 1-2": "bytes=1-2", "bytes=0-1,-0": "bytes=0-1", "bytes= 5- , -10": "bytes=5-,-10", "bytes=0-99": "bytes=0-99",
		// Past an int64: read as its largest, as the front door reads it
		// (byterange.Pos); they were ignored here (the whole title) where
		// the front door answered 416.
		"bytes=0-99999999999999999999": "bytes=0-9223372036854775807", "bytes=-99999999999999999999": "bytes=-9223372036854775807",
		"bytes=1000000000000000000000-": "bytes=9223372036854775807-", "bytes=007-9": "bytes=7-9",
	} {
		if got, outcome := cleanRange(v); got != want || outcome != byterange.Serve {
			t.Errorf("%q: %q (%d), want %q", v, got, outcome, want)
		}
	}
}

func TestRangeCheck(t *testing.T) {
	for v, want := range map[string]byterange.Outcome{
		"": byterange.Serve, "bytes=0-99": byterange.Serve, "bytes=100-": byterange.Serve, "bytes=-500": byterange.Serve,
		"bytes=0-0,5-9": byterange.Serve, "Bytes = 1-2": byterange.Serve, "bytes=0-1,-0": byterange.Serve, "bytes=007-9": byterange.Serve,
		"bytes=-0": byterange.Unsatisfiable, "bytes=-000": byterange.Unsatisfiable,
		"items=0-5": byterange.Ignored, "bytes=5-2": byterange.Ignored, "bytes=abc": byterange.Ignored, "bytes=-": byterange.Ignored,
		"bytes=": byterange.Ignored, "bytes=1-2-3": byterange.Ignored, "bytes=99999999999999999999-": byterange.Serve, "0-5": byterange.Ignored,
	} {
		if got := byterange.Classify(v); got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
}

// TestHTTPRangesRFC7233: a Range of another unit or that does not parse
// is ignored (200, the whole title); a zero-length suffix, or ranges
// that all start past the end, are 416 with "Content-Range: bytes */size"
// and the title's size in words; a suffix range is the title's end.
func TestHTTPRangesRFC7233(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	url := httpURL(n, mint(t, "rfc7233", "sample-001", "node-1", "", time.Minute), "sample-001.ts")
	for _, v := range []string{"items=0-5", "bytes=5-2", "bytes=abc"} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Range", v)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close() // the headers say it: the whole title comes
		if res.StatusCode != http.StatusOK || res.ContentLength != int64(len(data)) {
			t.Errorf("Range %q: %d, Content-Length %d; want 200 with the whole title", v, res.StatusCode, res.ContentLength)
		}
	}
	// Every unsatisfiable range says so alike, as the front door does
	// (a range past the end said net/http's "invalid range: failed to
	// overlap").
	for _, v := range []string{"bytes=-0", "bytes=" + itoa(len(data)) + "-", "bytes=" + itoa(len(data)+10) + "-" + itoa(len(data)+20) + ",-0",
		"bytes=1000000000000000000000-"} { // past an int64: past the end, as at the front door (the node sent the whole title)
		res, b := get(t, url, "Range", v)
		if cr := res.Header.Get("Content-Range"); res.StatusCode != http.StatusRequestedRangeNotSatisfiable || cr != "bytes */"+itoa(len(data)) ||
			strings.TrimSpace(string(b)) != "range not satisfiable: the title is "+itoa(len(data))+" bytes" {
			t.Errorf("Range %s: %d, Content-Range %q, %q", v, res.StatusCode, cr, b)
		}
	}
	// A last-pos or a suffix past an int64 is the title to its end (206),
	// as at the front door; the node ignored them (200).
	for _, v := range []string{"bytes=0-99999999999999999999", "bytes=-99999999999999999999"} {
		if res, b := get(t, url, "Range", v); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data) {
			t.Errorf("Range %s: %d, %d bytes; want 206 with the whole title", v, res.StatusCode, len(b))
		}
	}
	// Preconditions come before the Range (RFC 9110 §13.2.2): an If-Range
	// that does not match the title's ETag has the Range ignored and the
	// whole title sent, and a failed If-Match is 412; both were
	// 416 for a range past the end or more than 16 ranges. If-Match: *
	// holds, and the range is still unsatisfiable.
	many := "bytes=0-1"
	for k := 1; k <= 16; k++ {
		many += "," + itoa(10*k) + "-" + itoa(10*k+1)
	}
	past := "bytes=" + itoa(len(data)+10) + "-"
	for _, c := range []struct {
		rng, hdr, val string
		want          int
	}{
		{past, "If-Range", `"stale"`, http.StatusOK},
		{many, "If-Range", `"stale"`, http.StatusOK},
		{past, "If-Match", `"nope"`, http.StatusPreconditionFailed},
		{"bytes=0-9", "If-Match", `"nope"`, http.StatusPreconditionFailed},
		{past, "If-Match", "*", http.StatusRequestedRangeNotSatisfiable},
		{past, "If-Match", `"x", *`, http.StatusRequestedRangeNotSatisfiable},
		{past, "If-Match", "", http.StatusRequestedRangeNotSatisfiable},
		{past, "If-None-Match", "*", http.StatusNotModified},
		{"bytes=0-9", "If-None-Match", "*", http.StatusNotModified},
	} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Range", c.rng)
		req.Header.Set(c.hdr, c.val)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		if c.want == http.StatusPreconditionFailed {
			body, _ = io.ReadAll(res.Body)
		}
		res.Body.Close() // the headers say it (the whole title comes at the viewer's pace)
		if res.StatusCode != c.want || (c.want == http.StatusOK && res.ContentLength != int64(len(data))) {
			t.Errorf("Range %.30s… with %s: %s: %d, Content-Length %d; want %d", c.rng, c.hdr, c.val, res.StatusCode, res.ContentLength, c.want)
		}
		// A 412 is an error with a text body, as the others (it was
		// empty, Content-Type: video/mp2t).
		if ct := res.Header.Get("Content-Type"); c.want == http.StatusPreconditionFailed &&
			(!strings.HasPrefix(ct, "text/plain") || !strings.HasPrefix(string(body), "precondition failed: If-Match names no entity tag of the title")) {
			t.Errorf("Range %.30s… with %s: %s: %d, Content-Type %q, body %q; want a text/plain error", c.rng, c.hdr, c.val, res.StatusCode, ct, body)
		}
	}
	// A playlist's 412 names the playlist (it has no ETag: any If-Match
	// but * fails).
	pl := httpURL(n, mint(t, "rfc7233", "sample-001", "node-1", "", time.Minute), "sample-001/index.m3u8")
	if res, b := get(t, pl, "If-Match", `"x"`); res.StatusCode != http.StatusPreconditionFailed ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") ||
		strings.TrimSpace(string(b)) != "precondition failed: If-Match names no entity tag of the playlist (its ETag: none)" {
		t.Errorf("a playlist's If-Match: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	// An HLS segment's 416 names the segment, whose size it gives (it said
	// "the title is", with the segment's size).
	seg := httpURL(n, mint(t, "rfc7233", "sample-001", "node-1", "", time.Minute), "sample-001/seg-0.ts")
	if res, b := get(t, seg, "Range", "bytes=99999999-"); res.StatusCode != http.StatusRequestedRangeNotSatisfiable ||
		!strings.HasPrefix(strings.TrimSpace(string(b)), "range not satisfiable: the segment is ") {
		t.Errorf("a segment's range past its end: %d %q", res.StatusCode, b)
	}
	if res, b := get(t, url, "Range", "bytes=-188"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[len(data)-188:]) {
		t.Errorf("Range bytes=-188: %d, %d bytes", res.StatusCode, len(b))
	}
	for _, v := range []string{"Bytes=0-187", "bytes = 0-187", "bytes=0-187,-0"} {
		if res, b := get(t, url, "Range", v); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, data[:188]) {
			t.Errorf("Range %q: %d, %d bytes; want the first packet", v, res.StatusCode, len(b))
		}
	}
}
