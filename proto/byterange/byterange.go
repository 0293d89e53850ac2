package byterange

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// Satisfiable reports whether h, an HTTP Range header (RFC 9110
// §14.1.2), asks for at least one byte of a representation of size bytes.
// A Range that is not of bytes or does not parse counts as satisfiable
// (the node answers it as its HTTP server does); false only when every
// range of a well-formed bytes Range starts at or past size, or is a
// suffix of no byte.
func Satisfiable(h string, size int64) bool {
	unit, specs, ok := strings.Cut(strings.TrimSpace(h), "=")
	if !ok || !strings.EqualFold(unit, "bytes") { // range units are case-insensitive (RFC 9110 §14.1)
		return true
	}
	seen := false
	for _, spec := range strings.Split(specs, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue // RFC 9110 §5.6.1: empty list elements are ignored
		}
		first, last, ok := strings.Cut(spec, "-")
		if !ok {
			return true
		}
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		if first == "" { // a suffix: the last bytes
			n, ok := bytePos(last)
			if !ok || (n > 0 && size > 0) {
				return true
			}
			seen = true
			continue
		}
		a, ok := bytePos(first)
		if !ok {
			return true
		}
		if last != "" {
			if b, ok := bytePos(last); !ok || b < a {
				return true
			}
		}
		if a < size {
			return true
		}
		seen = true
	}
	return !seen
}

// bytePos reads a byte position of a Range: 1DIGIT or more (no sign, no
// space; RFC 9110 §14.1.2), one past what an int64 holds read as
// math.MaxInt64 (past any title's end). ok is false for anything else.
func bytePos(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // digits only: too many for an int64
		return math.MaxInt64, true
	}
	return n, true
}

// PreconditionsFirst reports whether the request headers h hold a
// precondition that may decide the answer before its Range (RFC 9110
// §13.2.2) on a node, whose ETag (a title's strong entity tag, or none
// for a copy without a version) is not known here and which sends no
// Last-Modified, read as net/http's ServeContent reads them (each
// header's first line, its entity-tag list scanned as checkIfMatch and
// checkIfNoneMatch scan it): true when some ETag of the node would have
// it decide: an If-Range, which then does not hold (the Range is ignored
// and the whole body sent, as to a client whose copy is of another
// version); an If-Match whose list reaches no "*", which then fails
// (412); an If-None-Match whose list reaches a "*" or an entity-tag
// (before a member that is none), which then matches (304 to a GET or
// HEAD). A Range that asks for no byte is answered 416 only without them.
func PreconditionsFirst(h http.Header) bool {
	if h.Get("If-Range") != "" {
		return true
	}
	if im := h.Get("If-Match"); im != "" && !listHas(im, false) {
		return true
	}
	inm := h.Get("If-None-Match")
	return inm != "" && listHas(inm, true)
}

// listHas scans the entity-tag list v as net/http's checkIfMatch and
// checkIfNoneMatch do: true at a member starting with "*", or, with tag,
// at a member that is an entity-tag; false at the end of the list or at
// the first member that is not an entity-tag (RFC 9110 §8.8.3), where
// they stop.
func listHas(v string, tag bool) bool {
	for {
		v = textproto.TrimString(v)
		switch {
		case v == "":
			return false
		case v[0] == ',':
			v = v[1:]
			continue
		case v[0] == '*':
			return true
		}
		s := strings.TrimPrefix(v, "W/")
		if len(s) < 2 || s[0] != '"' {
			return false
		}
		end := -1
		for i := 1; i < len(s); i++ {
			c := s[i]
			if c == '"' {
				end = i
				break
			}
			if !(c == 0x21 || c >= 0x23 && c <= 0x7E || c >= 0x80) {
				return false
			}
		}
		if end < 0 {
			return false
		}
		if tag {
			return true
		}
		v = s[end+1:]
	}
}

// MaxRanges is the most byte ranges one HTTP request may ask for; more
// are answered 416, at the front door as at the node (RFC 9110 §14.2 and
// §15.5.17: "an excessive number of small or overlapping ranges", a
// denial of service: 2,000 one-byte ranges drew a 269 KB multipart
// answer). No player asks for more than one.
const MaxRanges = 16

// Outcome is how a Range header is answered (Classify).
type Outcome int

// Outcomes of Classify.
const (
	Serve         Outcome = iota // none, or byte ranges answered as asked
	Ignored                      // another unit, or not a byte-range set: the whole body (RFC 9110 §14.2)
	Unsatisfiable                // only suffixes of no byte ("bytes=-0"): 416
	Excessive                    // more than MaxRanges ranges: 416
)

// Classify classifies a Range header value v (RFC 9110 §14.1.2
// ranges-specifier) as the node answers it: Ignored for another unit, a
// range that does not parse, or a last-pos before its first-pos;
// Excessive past MaxRanges well-formed ranges; Unsatisfiable when every
// range is a suffix of no byte; else Serve. Byte positions are runs of
// digits of any length, those past an int64 read as math.MaxInt64 (Pos).
func Classify(v string) Outcome {
	if v == "" {
		return Serve
	}
	unit, set, ok := strings.Cut(v, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		return Ignored
	}
	specs, empty := 0, 0
	for _, spec := range strings.Split(set, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue // empty list elements are allowed (RFC 9110 §5.6.1)
		}
		first, last, ok := strings.Cut(spec, "-")
		first, last = strings.TrimSpace(first), strings.TrimSpace(last)
		if !ok || !digitsOnly(first) || !digitsOnly(last) || (first == "" && last == "") {
			return Ignored
		}
		if first != "" && last != "" && Pos(first) > Pos(last) {
			return Ignored // last-pos before first-pos: invalid
		}
		specs++
		if first == "" && Pos(last) == 0 {
			empty++ // "-0": a suffix of no byte
		}
	}
	switch {
	case specs == 0:
		return Ignored
	case specs > MaxRanges:
		return Excessive
	case empty == specs:
		return Unsatisfiable
	}
	return Serve
}

// Pos reads s, a run of ASCII digits (digitsOnly), as a byte position,
// one past what an int64 holds read as math.MaxInt64 (past any title's
// end; as a last-pos, the body's last byte; as a suffix, the whole body).
func Pos(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

// digitsOnly reports whether s is empty or a run of ASCII digits.
func digitsOnly(s string) bool { return strings.TrimLeft(s, "0123456789") == "" }
