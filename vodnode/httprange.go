package vodnode

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// serveContent is http.ServeContent of a body of size bytes, with the
// Range header first held to RFC 7233: a range header of another unit or
// that does not parse is ignored (§3.1: 200 with the whole body, where
// ServeContent answers 416), and a zero-length suffix ("bytes=-0") is
// unsatisfiable (§2.1: 416 with "Content-Range: bytes */size", where
// ServeContent answers 206 with an empty, malformed range).
func serveContent(w http.ResponseWriter, r *http.Request, name string, size int64, rd io.ReadSeeker) {
	v, outcome := cleanRange(r.Header.Get("Range"))
	switch outcome {
	case rangeIgnored:
		r.Header.Del("Range")
	case rangeUnsatisfiable:
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		http.Error(w, "range not satisfiable", http.StatusRequestedRangeNotSatisfiable)
		return
	case rangeServe:
		if v != "" {
			r.Header.Set("Range", v) // as ServeContent reads it
		}
	}
	http.ServeContent(w, r, name, time.Time{}, rd)
}

// cleanRange returns the Range header v as http.ServeContent reads it
// ("bytes=" exactly, the unit matched case-insensitively as RFC 9110
// 14.1 has it, zero-length suffixes dropped) and rangeCheck's outcome.
func cleanRange(v string) (string, int) {
	outcome := rangeCheck(v)
	if outcome != rangeServe || v == "" {
		return "", outcome
	}
	_, set, _ := strings.Cut(v, "=")
	var kept []string
	for _, spec := range strings.Split(set, ",") {
		spec = strings.TrimSpace(spec)
		first, last, _ := strings.Cut(spec, "-")
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		if spec == "" || (first == "" && trimZeros(last) == "0") {
			continue
		}
		kept = append(kept, first+"-"+last)
	}
	return "bytes=" + strings.Join(kept, ","), rangeServe
}

// Outcomes of rangeCheck.
const (
	rangeServe         = iota // none, or byte ranges ServeContent answers right
	rangeIgnored              // another unit, or not a byte-range set: serve it all
	rangeUnsatisfiable        // only zero-length suffixes
)

// rangeCheck classifies a Range header value (RFC 7233 §2.1
// byte-ranges-specifier).
func rangeCheck(v string) int {
	if v == "" {
		return rangeServe
	}
	unit, set, ok := strings.Cut(v, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		return rangeIgnored
	}
	specs, empty := 0, 0
	for _, spec := range strings.Split(set, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue // empty list elements are allowed (RFC 7230 §7)
		}
		first, last, ok := strings.Cut(spec, "-")
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		if !ok || !digits(first) || !digits(last) || (first == "" && last == "") {
			return rangeIgnored
		}
		if a, b := trimZeros(first), trimZeros(last); first != "" && last != "" && (len(a) > len(b) || (len(a) == len(b) && a > b)) {
			return rangeIgnored // last-byte-pos before first-byte-pos: invalid (§2.1)
		}
		specs++
		if first == "" && trimZeros(last) == "0" {
			empty++ // "-0": a suffix of no byte
		}
	}
	switch {
	case specs == 0:
		return rangeIgnored
	case empty == specs:
		return rangeUnsatisfiable
	}
	return rangeServe
}

// digits reports whether s is empty or a run of ASCII digits of at most
// 18 significant ones (a position in int64).
func digits(s string) bool {
	s = trimZeros(s)
	if len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// trimZeros drops the leading zeros of a run of digits ("0" stays).
func trimZeros(s string) string {
	t := strings.TrimLeft(s, "0")
	if t == "" && s != "" {
		return "0"
	}
	return t
}
