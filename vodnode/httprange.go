package vodnode

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"vodcluster/proto/byterange"
)

// serveContent is http.ServeContent of a body of size bytes, with the
// Range header first held to RFC 7233: a range header of another unit or
// that does not parse is ignored (§3.1: 200 with the whole body, where
// ServeContent answers 416), and a zero-length suffix ("bytes=-0") is
// unsatisfiable (§2.1: 416 with "Content-Range: bytes */size", where
// ServeContent answers 206 with an empty, malformed range). More than
// byterange.MaxRanges ranges are refused with the same 416 (RFC 9110 §15.5.17),
// where ServeContent answered every one in a multipart body; ranges that
// overlap are merged (coalesce), so that the answer is never more than
// the body's bytes and a client that names a range twice ("bytes=0-,0-")
// gets it. A non-empty etag is sent as the body's ETag (etag.go), which
// ServeContent compares an If-Range (strong comparison: 206 when it
// matches, else 200 with the whole body) and an If-None-Match (304) with;
// an If-Match that fails is answered here, 412 with a text/plain body
// saying so, as other errors are (ServeContent's has no body, under the
// body's Content-Type, video/mp2t).
func serveContent(w http.ResponseWriter, r *http.Request, name string, size int64, etag string, rd io.ReadSeeker) {
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	what := "the title"
	switch {
	case strings.HasPrefix(name, "seg-"):
		what = "the segment" // an HLS segment: its own ETag and size, not the title's
	case name == "index.m3u8":
		what = "the playlist"
	}
	if preconditionStatus(r, etag) == http.StatusPreconditionFailed {
		// A text body saying why, as other errors have (ServeContent
		// answers it with no body, under the body's Content-Type).
		http.Error(w, fmt.Sprintf("precondition failed: If-Match names no entity tag of %s (its ETag: %s)", what, cmp.Or(etag, "none")), http.StatusPreconditionFailed)
		return
	}
	v, outcome := cleanRange(r.Header.Get("Range"))
	if outcome == byterange.Serve && v != "" {
		v = coalesce(v, size)
	}
	if outcome == byterange.Serve && v != "" && !byterange.Satisfiable(v, size) { // as the front door decides it
		outcome = byterange.Unsatisfiable // net/http's text: "invalid range: failed to overlap"
	}
	if (outcome == byterange.Unsatisfiable || outcome == byterange.Excessive) && preconditionsFirst(r, etag) {
		// Preconditions first (RFC 9110 §13.2.2): ServeContent answers
		// them once the Range is dropped (412, or the whole body).
		outcome = byterange.Ignored
	}
	switch outcome {
	case byterange.Ignored:
		r.Header.Del("Range")
	case byterange.Unsatisfiable, byterange.Excessive:
		w.Header().Del("ETag") // the answer is no representation (as ServeContent's errors)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		msg := fmt.Sprintf("range not satisfiable: %s is %d bytes", what, size) // as the front door's
		if outcome == byterange.Excessive {
			msg = fmt.Sprintf("range not satisfiable: more than %d byte ranges", byterange.MaxRanges)
		}
		http.Error(w, msg, http.StatusRequestedRangeNotSatisfiable)
		return
	case byterange.Serve:
		if v != "" {
			r.Header.Set("Range", v) // as ServeContent reads it
		}
	}
	http.ServeContent(w, r, name, time.Time{}, rd)
}

// cleanRange returns the Range header v as http.ServeContent reads it
// ("bytes=" exactly, the unit matched case-insensitively as RFC 9110
// 14.1 has it, zero-length suffixes dropped, positions past an int64
// read as math.MaxInt64) and byterange.Classify's outcome.
func cleanRange(v string) (string, byterange.Outcome) {
	outcome := byterange.Classify(v)
	if outcome != byterange.Serve || v == "" {
		return "", outcome
	}
	_, set, _ := strings.Cut(v, "=")
	var kept []string
	for _, spec := range strings.Split(set, ",") {
		spec = strings.TrimSpace(spec)
		first, last, _ := strings.Cut(spec, "-")
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		if spec == "" || (first == "" && byterange.Pos(last) == 0) {
			continue
		}
		kept = append(kept, posText(first)+"-"+posText(last))
	}
	return "bytes=" + strings.Join(kept, ","), byterange.Serve
}

// coalesce returns v, a byte-range set as cleanRange returns it, with
// the ranges that overlap once resolved against a body of size bytes (a
// suffix is its last bytes, an open range runs to the end) merged into
// one (RFC 9110 §14.2: a server may coalesce overlapping ranges,
// whatever their order): then every satisfiable range, in ascending
// order, as first-last; v itself when no two overlap (ranges that only
// touch, 0-99,100-199, are served as asked). A range that starts past the
// end overlaps nothing and is dropped once others are merged (net/http
// skips it anyway when another is satisfiable).
func coalesce(v string, size int64) string {
	_, set, _ := strings.Cut(v, "=")
	specs := strings.Split(set, ",")
	if len(specs) < 2 {
		return v
	}
	type span struct{ from, to int64 } // [from, to)
	spans := make([]span, 0, len(specs))
	for _, spec := range specs {
		first, last, _ := strings.Cut(spec, "-")
		f, ferr := strconv.ParseInt(first, 10, 64)
		l, lerr := strconv.ParseInt(last, 10, 64)
		var sp span
		switch {
		case first == "" && lerr == nil: // the last l bytes
			sp = span{max(0, size-l), size}
		case ferr == nil && last == "":
			sp = span{f, size}
		case ferr == nil && lerr == nil:
			sp = span{f, min(l, size-1) + 1} // l may be math.MaxInt64 (byterange.Pos)
		default:
			continue // byterange.Classify let no such range through
		}
		if sp.from < sp.to {
			spans = append(spans, sp)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	merged, overlap := spans[:0:0], false
	for _, sp := range spans {
		if k := len(merged) - 1; k >= 0 && sp.from < merged[k].to {
			merged[k].to, overlap = max(merged[k].to, sp.to), true
			continue
		}
		merged = append(merged, sp)
	}
	if !overlap {
		return v
	}
	out := make([]string, len(merged))
	for i, sp := range merged {
		out[i] = fmt.Sprintf("%d-%d", sp.from, sp.to-1)
	}
	return "bytes=" + strings.Join(out, ",")
}

// posText is a byte position as ServeContent reads it: past an int64
// read as math.MaxInt64 (byterange.Pos), as the front door reads it; ""
// stays "".
func posText(s string) string {
	if s == "" {
		return ""
	}
	return strconv.FormatInt(byterange.Pos(s), 10)
}
