package vodnode

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// headETag returns the ETag and status of a HEAD of url.
func headETag(t *testing.T, url string) (string, *http.Response) {
	t.Helper()
	res, err := http.Head(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.Header.Get("ETag"), res
}

// TestHTTPETagIfRange: a progressive download carries a strong ETag, the
// same while its title is filled and once the fill completes (HEAD, 200 and
// 206 alike); curl resuming a download with -C - and If-Range of that ETag
// gets the rest (206) and ends with the title's bytes; a Range with a
// stale If-Range (another version's tag, a date: no Last-Modified is
// sent) gets the whole title (200), also for a Range past the end (not
// 416); If-None-Match of the tag is 304.
func TestHTTPETagIfRange(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	const id = "short-001"
	o := heldOrigin(t, 300*188) // the fill waits there until unhold
	data := o.titles[id]
	n := startNode(t, startOrigin(t, o), withHTTP)
	url := httpURL(n, mint(t, "etag", id, "node-1", "", time.Minute), id+".ts")

	tag, res := headETag(t, url)
	if res.StatusCode != http.StatusOK || res.ContentLength != int64(len(data)) {
		t.Fatalf("HEAD while filling: %d, Content-Length %d; want 200, %d", res.StatusCode, res.ContentLength, len(data))
	}
	if tag == "" || strings.HasPrefix(tag, "W/") || !strings.HasPrefix(tag, `"`) || !strings.HasSuffix(tag, `"`) {
		t.Fatalf("HEAD while filling: ETag %q; want a strong entity tag", tag)
	}
	res, b := get(t, url, "Range", "bytes=0-187", "If-Range", tag)
	if res.StatusCode != http.StatusPartialContent || res.Header.Get("ETag") != tag || !bytes.Equal(b, data[:188]) {
		t.Fatalf("Range with If-Range %s while filling: %d, ETag %q, %d bytes; want 206 with the tag and the first packet",
			tag, res.StatusCode, res.Header.Get("ETag"), len(b))
	}

	o.unhold()
	waitComplete(t, n, id)
	if again, _ := headETag(t, url); again != tag {
		t.Fatalf("ETag %q once filled, %q while filling: the same bytes", again, tag)
	}

	// curl resumes a download cut after 100 packets.
	out := filepath.Join(t.TempDir(), id+".ts")
	if err := os.WriteFile(out, data[:100*188], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("curl", "-sS", "-C", "-", "--header", "If-Range: "+tag, "-o", out, "-D", "-", "-w", "%{http_code}", url)
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("curl -C -: %v: %s", err, got)
	}
	if !strings.HasSuffix(string(got), "206") || !strings.Contains(strings.ToLower(string(got)), "etag: "+strings.ToLower(tag)) {
		t.Fatalf("curl -C - with If-Range: %s; want 206 with ETag %s", got, tag)
	}
	if file, _ := os.ReadFile(out); !bytes.Equal(file, data) {
		t.Fatalf("curl's resumed file: %d bytes, not the title's %d", len(file), len(data))
	}

	// A stale validator: the whole title, 200.
	stale := strings.TrimSuffix(tag, `"`) + `0"`
	past := "bytes=" + strconv.Itoa(len(data)+10) + "-"
	for _, c := range [][2]string{
		{"bytes=18800-", stale},
		{"bytes=18800-", time.Now().UTC().Format(http.TimeFormat)},
		{past, stale},
	} {
		res, b := get(t, url, "Range", c[0], "If-Range", c[1])
		if res.StatusCode != http.StatusOK || res.Header.Get("ETag") != tag || !bytes.Equal(b, data) {
			t.Errorf("Range %s, If-Range %s: %d, ETag %q, %d bytes; want 200 with the whole title (%d bytes)",
				c[0], c[1], res.StatusCode, res.Header.Get("ETag"), len(b), len(data))
		}
	}
	// A matching If-Range leaves an unsatisfiable Range unsatisfiable.
	if res, _ := get(t, url, "Range", past, "If-Range", tag); res.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("Range past the end with a matching If-Range: %d, want 416", res.StatusCode)
	}
	if res, b := get(t, url, "If-None-Match", tag); res.StatusCode != http.StatusNotModified || len(b) != 0 || res.Header.Get("ETag") != tag {
		t.Errorf("If-None-Match %s: %d, %d bytes, ETag %q; want 304 with the tag", tag, res.StatusCode, len(b), res.Header.Get("ETag"))
	}
	if res, _ := get(t, url, "Range", past, "If-None-Match", tag); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s with a Range past the end: %d, want 304 (preconditions first)", tag, res.StatusCode)
	}
}

// TestHLSSegmentETag: each HLS segment carries its own strong ETag (HEAD,
// 200, 206), which an If-Range must match for a range of it (the title's
// or another segment's tag gets the whole segment).
func TestHLSSegmentETag(t *testing.T) {
	const id = "short-002"
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o), withHTTP)
	tok := mint(t, "etag-hls", id, "node-1", "", time.Minute)
	seg0, seg1 := httpURL(n, tok, id+"/seg-0.ts"), httpURL(n, tok, id+"/seg-1.ts")
	tag0, res := headETag(t, seg0)
	tag1, _ := headETag(t, seg1)
	title, _ := headETag(t, httpURL(n, tok, id+".ts"))
	if res.StatusCode != http.StatusOK || tag0 == "" || strings.HasPrefix(tag0, "W/") || tag1 == "" || tag0 == tag1 || tag0 == title {
		t.Fatalf("HEAD seg-0: %d, ETag %q; seg-1's %q, the title's %q: want three strong tags, all different", res.StatusCode, tag0, tag1, title)
	}
	res, whole := get(t, seg0)
	if res.StatusCode != http.StatusOK || res.Header.Get("ETag") != tag0 {
		t.Fatalf("GET seg-0: %d, ETag %q; want 200, %s", res.StatusCode, res.Header.Get("ETag"), tag0)
	}
	if res, b := get(t, seg0, "Range", "bytes=188-", "If-Range", tag0); res.StatusCode != http.StatusPartialContent || !bytes.Equal(b, whole[188:]) {
		t.Errorf("seg-0 Range with its If-Range: %d, %d bytes; want 206 with its rest", res.StatusCode, len(b))
	}
	for _, other := range []string{tag1, title} {
		if res, b := get(t, seg0, "Range", "bytes=188-", "If-Range", other); res.StatusCode != http.StatusOK || !bytes.Equal(b, whole) {
			t.Errorf("seg-0 Range with If-Range %s: %d, %d bytes; want 200 with the whole segment", other, res.StatusCode, len(b))
		}
	}
	if again, _ := headETag(t, seg0); again != tag0 {
		t.Errorf("seg-0's ETag %q, then %q", tag0, again)
	}
}
