package byterange

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
// If-None-Match with "*" or an entity-tag (the node's, maybe) may decide
// before the Range, as ServeContent reads them; an If-Match with "*", an
// empty one, an If-None-Match with neither and no precondition do not.
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
		{http.Header{"If-None-Match": {`"x"`}}, true},
		{http.Header{"If-None-Match": {`W/"x"`}}, true},
		{http.Header{"If-None-Match": {"bogus"}}, false},
		{http.Header{"If-None-Match": {"*"}}, true},
		{http.Header{"If-None-Match": {`"x", *`}}, true},
	} {
		if got := PreconditionsFirst(c.h); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
}

// PreconditionsFirst decides as http.ServeContent does, for a body
// without Last-Modified, with no ETag or with one the lists name, and a
// Range past its end: true exactly when ServeContent does not answer 416
// for one of them, malformed lists included (a split on commas took
// "bogus, *" for a list with "*").
func TestPreconditionsFirstAsServeContent(t *testing.T) {
	body := strings.Repeat("x", 100)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		for _, h := range []http.Header{
			{"If-None-Match": {"bogus, *"}}, {"If-None-Match": {`"x", bogus, *`}}, {"If-None-Match": {`"x" *`}},
			{"If-Match": {"bogus, *"}}, {"If-Match": {`"x", bogus, *`}}, {"If-Match": {`"x" *`}},
			{"If-Match": {`*"x"`}}, {"If-Match": {"\u00a0*"}}, {"If-Match": {`W/"x"`}},
			{"If-None-Match": {`W/"x"`}}, {"If-Range": {`"x"`}, "If-Match": {"*"}},
			{"If-Match": {"*"}}, {"If-None-Match": {"*"}}, {"If-None-Match": {`"x", *`}}, {},
			{"If-None-Match": {`"x"`}}, {"If-None-Match": {`bogus, "x"`}}, {"If-Match": {`"x"`}}, {"If-Range": {`"x"`}},
		} {
			var codes []int
			decides := false
			for _, etag := range []string{"", `"x"`} {
				req := httptest.NewRequest(method, "/t", nil)
				for k, v := range h {
					req.Header[k] = v
				}
				req.Header.Set("Range", "bytes=1000-")
				rec := httptest.NewRecorder()
				if etag != "" {
					rec.Header().Set("ETag", etag)
				}
				http.ServeContent(rec, req, "t.ts", time.Time{}, strings.NewReader(body))
				codes = append(codes, rec.Code)
				decides = decides || rec.Code != http.StatusRequestedRangeNotSatisfiable
			}
			if got := PreconditionsFirst(h); got != decides {
				t.Errorf("%s %q: %v, ServeContent answers %v (no ETag, ETag \"x\")", method, h, got, codes)
			}
		}
	}
}

// Classify reads a Range as the node answers it; positions past an int64
// are read as its largest, as Satisfiable reads them, so that the front
// door and the node agree (the node ignored them: the whole title where
// the front door answered 416).
func TestClassify(t *testing.T) {
	for v, want := range map[string]Outcome{
		"": Serve, "bytes=0-99": Serve, "bytes=-500": Serve, "bytes=0-1,-0": Serve, "Bytes = 1-2": Serve,
		"bytes=99999999999999999999-": Serve, "bytes=0-99999999999999999999": Serve,
		"bytes=-0": Unsatisfiable, "bytes=-000": Unsatisfiable,
		"items=0-5": Ignored, "bytes=5-2": Ignored, "bytes=abc": Ignored, "bytes=-": Ignored, "bytes=": Ignored,
		"bytes=99999999999999999999-5": Ignored,
		"bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15":       Serve,
		"bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10,11-11,12-12,13-13,14-14,15-15,16-16": Excessive,
	} {
		if got := Classify(v); got != want {
			t.Errorf("Classify(%q) = %d, want %d", v, got, want)
		}
	}
}
