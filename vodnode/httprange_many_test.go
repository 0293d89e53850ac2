package vodnode

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rangeSet returns "bytes=" with n one-byte ranges, every other byte from
// 0.
func rangeSet(n int) string {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf("%d-%d", 2*i, 2*i)
	}
	return "bytes=" + strings.Join(specs, ",")
}

func TestRangeCheckCapsRanges(t *testing.T) {
	if got := rangeCheck(rangeSet(maxByteRanges)); got != rangeServe {
		t.Errorf("%d ranges: %d, want rangeServe", maxByteRanges, got)
	}
	if got := rangeCheck(rangeSet(maxByteRanges + 1)); got != rangeExcessive {
		t.Errorf("%d ranges: %d, want rangeExcessive", maxByteRanges+1, got)
	}
	for v, want := range map[string]bool{
		"bytes=0-99,50-149": true, "bytes=0-99,100-199": false, "bytes=-100,0-": true, "bytes=-100,0-899": false,
		"bytes=500-,0-10": false, "bytes=0-10,5-5": true, "bytes=2000-3000,2000-": false, // past the end (1000): nothing to overlap
		"bytes=0-99": false, "bytes=10-20,0-9,21-30": false, "bytes=10-20,0-10": true,
	} {
		if got := overlapping(v, 1000); got != want {
			t.Errorf("overlapping(%q, 1000) = %v, want %v", v, got, want)
		}
	}
}

// An HTTP request for more than 16 byte ranges, or for ranges that
// overlap, is refused with 416 and "Content-Range: bytes */size" (RFC
// 9110 §15.5.17): 2,000 one-byte ranges drew a 269 KB multipart answer.
// Up to 16 ranges that do not overlap are served (206, multipart).
func TestHTTPManyOrOverlappingRangesRefused(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	if len(data) < 4000 {
		t.Fatalf("sample-001 is %d bytes: too short for 2,000 ranges", len(data))
	}
	url := httpURL(n, mint(t, "ranges", "sample-001", "node-1", "", time.Minute), "sample-001.ts")
	for _, v := range []string{rangeSet(2000), rangeSet(maxByteRanges + 1), "bytes=0-99,50-149", "bytes=-100,0-"} {
		res, b := get(t, url, "Range", v)
		if cr := res.Header.Get("Content-Range"); res.StatusCode != http.StatusRequestedRangeNotSatisfiable || cr != "bytes */"+itoa(len(data)) || len(b) > 200 {
			t.Errorf("Range of %d bytes (%.40s...): %d, Content-Range %q, %d bytes of body; want 416 with bytes */%d and a short body",
				len(v), v, res.StatusCode, cr, len(b), len(data))
		}
	}
	res, b := get(t, url, "Range", rangeSet(maxByteRanges))
	if res.StatusCode != http.StatusPartialContent || !strings.HasPrefix(res.Header.Get("Content-Type"), "multipart/byteranges") {
		t.Fatalf("%d ranges: %d %q; want 206 multipart", maxByteRanges, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if parts := strings.Count(string(b), "Content-Range: bytes "); parts != maxByteRanges {
		t.Fatalf("%d ranges: %d parts", maxByteRanges, parts)
	}
	if res, b := get(t, url, "Range", "bytes=0-99,100-199"); res.StatusCode != http.StatusPartialContent || strings.Count(string(b), "Content-Range: bytes ") != 2 {
		t.Fatalf("two adjacent ranges: %d, want 206 with two parts", res.StatusCode)
	}
}
