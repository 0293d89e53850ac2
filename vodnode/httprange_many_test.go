package vodnode

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"vodcluster/proto/byterange"
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
	if got := byterange.Classify(rangeSet(byterange.MaxRanges)); got != byterange.Serve {
		t.Errorf("%d ranges: %d, want byterange.Serve", byterange.MaxRanges, got)
	}
	if got := byterange.Classify(rangeSet(byterange.MaxRanges + 1)); got != byterange.Excessive {
		t.Errorf("%d ranges: %d, want byterange.Excessive", byterange.MaxRanges+1, got)
	}
	for v, want := range map[string]string{
		"bytes=0-99,50-149":               "bytes=0-149",
		"bytes=0-99,100-199":              "bytes=0-99,100-199", // touching: as asked
		"bytes=-100,0-":                   "bytes=0-999",
		"bytes=-100,0-899":                "bytes=-100,0-899",
		"bytes=500-,0-10":                 "bytes=500-,0-10",
		"bytes=0-10,5-5":                  "bytes=0-10",
		"bytes=2000-3000,2000-":           "bytes=2000-3000,2000-", // past the end (1000): nothing to overlap
		"bytes=0-99":                      "bytes=0-99",
		"bytes=10-20,0-9,21-30":           "bytes=10-20,0-9,21-30",
		"bytes=10-20,0-10":                "bytes=0-20",
		"bytes=0-,0-":                     "bytes=0-999", // one range said twice
		"bytes=0-0,0-0":                   "bytes=0-0",
		"bytes=0-5,3-8,20-30,25-26,2000-": "bytes=0-8,20-30", // the one past the end dropped
		"bytes=900-1200,950-":             "bytes=900-999",
		// A last-pos of an int64's largest (byterange.Pos) ends at the end;
		// its last+1 overflowed and the range was dropped.
		"bytes=100-9223372036854775807,0-199": "bytes=0-999",
	} {
		if got := coalesce(v, 1000); got != want {
			t.Errorf("coalesce(%q, 1000) = %q, want %q", v, got, want)
		}
	}
}

// An HTTP request for more than 16 byte ranges is refused with 416 and
// "Content-Range: bytes */size" (RFC 9110 §15.5.17): 2,000 one-byte
// ranges drew a 269 KB multipart answer. Up to 16 ranges that do not
// overlap are served (206, multipart), two that touch as two parts.
func TestHTTPManyRangesRefused(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	if len(data) < 4000 {
		t.Fatalf("sample-001 is %d bytes: too short for 2,000 ranges", len(data))
	}
	url := httpURL(n, mint(t, "ranges", "sample-001", "node-1", "", time.Minute), "sample-001.ts")
	for _, v := range []string{rangeSet(2000), rangeSet(byterange.MaxRanges + 1)} {
		res, b := get(t, url, "Range", v)
		if cr := res.Header.Get("Content-Range"); res.StatusCode != http.StatusRequestedRangeNotSatisfiable || cr != "bytes */"+itoa(len(data)) || len(b) > 200 {
			t.Errorf("Range of %d bytes (%.40s...): %d, Content-Range %q, %d bytes of body; want 416 with bytes */%d and a short body",
				len(v), v, res.StatusCode, cr, len(b), len(data))
		}
	}
	res, b := get(t, url, "Range", rangeSet(byterange.MaxRanges))
	if res.StatusCode != http.StatusPartialContent || !strings.HasPrefix(res.Header.Get("Content-Type"), "multipart/byteranges") {
		t.Fatalf("%d ranges: %d %q; want 206 multipart", byterange.MaxRanges, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if parts := strings.Count(string(b), "Content-Range: bytes "); parts != byterange.MaxRanges {
		t.Fatalf("%d ranges: %d parts", byterange.MaxRanges, parts)
	}
	if res, b := get(t, url, "Range", "bytes=0-99,100-199"); res.StatusCode != http.StatusPartialContent || strings.Count(string(b), "Content-Range: bytes ") != 2 {
		t.Fatalf("two adjacent ranges: %d, want 206 with two parts", res.StatusCode)
	}
}

// Ranges that overlap are served merged (RFC 9110 §14.2: a server may
// coalesce them), not refused: "bytes=0-,0-" (one range said twice) is
// the whole title in one 206, "bytes=0-99,50-149" its first 150 bytes.
// They were refused with 416, and the player asking so stopped; before
// that net/http answered the whole title (200) or each range in a
// multipart body. The answer is never more than the title's bytes. Two
// Range lines are read as the first (net/http's Header.Get).
func TestHTTPOverlappingRangesMerged(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	data := o.titles["sample-001"]
	size := len(data)
	url := httpURL(n, mint(t, "overlap", "sample-001", "node-1", "", time.Minute), "sample-001.ts")
	for _, c := range []struct {
		rng      string
		from, to int // the one range served, [from, to]
	}{
		{"bytes=0-,0-", 0, size - 1},
		{"bytes=0-, 0-", 0, size - 1},
		{"bytes=0-99,50-149", 0, 149},
		{"bytes=-100,0-", 0, size - 1},
		{"bytes=1000-1999,1500-", 1000, size - 1},
		{"bytes=10-20,5-15,0-4", 0, 4}, // 0-4 and 5-20 touch: two parts, checked below
	} {
		res, b := get(t, url, "Range", c.rng)
		if c.rng == "bytes=10-20,5-15,0-4" {
			if res.StatusCode != http.StatusPartialContent || strings.Count(string(b), "Content-Range: bytes ") != 2 ||
				!strings.Contains(string(b), "Content-Range: bytes 5-20/"+itoa(size)) {
				t.Errorf("Range %s: %d, want 206 with two parts, 0-4 and 5-20:\n%.300q", c.rng, res.StatusCode, b)
			}
			continue
		}
		want := fmt.Sprintf("bytes %d-%d/%d", c.from, c.to, size)
		if res.StatusCode != http.StatusPartialContent || res.Header.Get("Content-Range") != want || !bytes.Equal(b, data[c.from:c.to+1]) {
			t.Errorf("Range %s: %d, Content-Range %q, %d bytes; want 206, %q and the %d bytes", c.rng, res.StatusCode,
				res.Header.Get("Content-Range"), len(b), want, c.to+1-c.from)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header["Range"] = []string{"bytes=0-", "bytes=0-"}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if want := fmt.Sprintf("bytes 0-%d/%d", size-1, size); res.StatusCode != http.StatusPartialContent || res.Header.Get("Content-Range") != want || !bytes.Equal(b, data) {
		t.Errorf("two Range lines bytes=0-: %d, Content-Range %q, %d bytes; want 206, %q and the title", res.StatusCode, res.Header.Get("Content-Range"), len(b), want)
	}
}
