package byterange

import (
	"net/http"
	"testing"
)

// TestSatisfiable: false only when every range of a well-formed bytes
// Range starts at or past the end, or is a suffix of no byte; anything
// that does not parse counts as satisfiable.
func TestSatisfiable(t *testing.T) {
	for _, tc := range []struct {
		h    string
		size int64
		want bool
	}{
		{"", 10, true}, {"bytes=0-", 10, true}, {"bytes=9-", 10, true}, {"bytes=10-", 10, false}, {"bytes=10-20", 10, false},
		{"bytes=-1", 10, true}, {"bytes=-0", 10, false}, {"bytes=-5", 0, false}, {"bytes=10-, 3-4", 10, true},
		{"bytes=10-,11-", 10, false}, {"bytes=5-2", 10, true}, {"bytes=a-", 10, true}, {"bytes=", 10, true},
		{"bytes=,", 10, true}, {"pages=10-", 10, true}, {" bytes = 10-", 10, true}, {"bytes=10", 10, true},
		{"Bytes=10-", 10, false}, {"bytes=+10-", 10, true}, {"bytes=10-+20", 10, true}, {"bytes=-+5", 10, true},
		{"bytes=99999999999999999999-", 10, false}, {"bytes=0-99999999999999999999", 10, true}, {"bytes=0-0", 10, true},
	} {
		if got := Satisfiable(tc.h, tc.size); got != tc.want {
			t.Errorf("Satisfiable(%q, %d) = %v, want %v", tc.h, tc.size, got, tc.want)
		}
	}
}

// TestPreconditionsFirst: an If-Range, an If-Match without "*" or an
// If-None-Match with "*" decides before the Range, as ServeContent reads
// them; an If-Match with "*", an empty one, an If-None-Match without
// "*" and no precondition do not.
func TestPreconditionsFirst(t *testing.T) {
	for _, c := range []struct {
		h    http.Header
		want bool
	}{
		{http.Header{}, false},
		{http.Header{"If-Range": {`"x"`}}, true},
		{http.Header{"If-Match": {`"x"`}}, true},
		{http.Header{"If-Match": {"*"}}, false},
		{http.Header{"If-Match": {" * "}}, false},
		{http.Header{"If-Match": {"*", `"x"`}}, false}, // the first line, as ServeContent reads it
		{http.Header{"If-Match": {`"x", *`}}, false},
		{http.Header{"If-Match": {""}}, false},
		{http.Header{"If-None-Match": {`"x"`}}, false},
		{http.Header{"If-None-Match": {"*"}}, true},
		{http.Header{"If-None-Match": {`"x", *`}}, true},
	} {
		if got := PreconditionsFirst(c.h); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
}
