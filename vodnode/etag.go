package vodnode

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"vodcluster/vodnode/store"
)

// Entity tags of the node's HTTP delivery (RFC 9110 §8.8.3). A progressive
// download and each HLS segment carry a strong ETag, so that a player or a
// download manager resuming a download with If-Range (§13.1.5) gets the
// rest (206) while the title's bytes are those it has, and the whole title
// (200) once they may be others. The tag is made of the title's id, its
// size in bytes and the origin's version of its bytes (store.Meta.Version:
// a digest of the whole title, checked by the fill), none of which changes
// while the title is filled: a title answers with the same ETag before and
// after its fill completes, as its bytes are the same. A title whose
// version the node does not know (a copy stored before versions) has no
// ETag: If-Range never matches on it, and a resumed download gets the
// whole title again. No Last-Modified is sent (a copy's file time is when
// the node filled it, not when its bytes changed), so an If-Range holding
// a date never matches either.

// titleETag returns the strong entity tag of title m's progressive form
// (quoted), or "" when m's version is unknown or holds a character an
// entity-tag may not (RFC 9110 §8.8.3: etagc).
func titleETag(m store.Meta) string {
	if m.Version == "" || m.Size <= 0 || !etagc(m.Version) {
		return ""
	}
	return fmt.Sprintf(`"%s-%d-%s"`, m.ID, m.Size, m.Version)
}

// segmentETag returns the strong entity tag of HLS segment i of title m:
// bytes [start, end) of the title after psi bytes of tables sent first
// (serveSegment); "" when m has no titleETag.
func segmentETag(m store.Meta, i int, start, end int64, psi int) string {
	t := titleETag(m)
	if t == "" {
		return ""
	}
	return fmt.Sprintf(`%s-seg%d-%d-%d-%d"`, strings.TrimSuffix(t, `"`), i, start, end, psi)
}

// etagc reports whether s is made of etagc characters only (%x21,
// %x23-7E; obs-text left out).
func etagc(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c > 0x7e {
			return false
		}
	}
	return true
}

// preconditionsFirst reports whether r's preconditions (If-Match,
// If-None-Match, If-Range) decide its answer before its Range (RFC 9110
// §13.2.2) on a representation whose entity tag is etag ("" for none):
// an If-Match that fails (412), an If-None-Match that matches (304 to a
// GET or HEAD), an If-Range that does not match (the Range is ignored: the
// whole representation): any answer but 206 of preconditionStatus.
func preconditionsFirst(r *http.Request, etag string) bool {
	return preconditionStatus(r, etag) != http.StatusPartialContent
}

// preconditionStatus returns the status http.ServeContent answers r with,
// as its preconditions decide it, on a representation whose entity tag is
// etag: it is evaluated on a one-byte body asked for by its only byte
// (206: the preconditions hold, or r has none; 200: an If-Range that does
// not match; 304; 412).
func preconditionStatus(r *http.Request, etag string) int {
	h := r.Header
	if h.Get("If-Match") == "" && h.Get("If-None-Match") == "" && h.Get("If-Range") == "" && h.Get("If-Unmodified-Since") == "" {
		return http.StatusPartialContent
	}
	q := &http.Request{Method: r.Method, URL: r.URL, Header: h.Clone()}
	q.Header.Set("Range", "bytes=0-0")
	sw := &statusWriter{h: http.Header{}}
	if etag != "" {
		sw.h.Set("ETag", etag)
	}
	http.ServeContent(sw, q, "", time.Time{}, strings.NewReader("x"))
	return sw.code
}

// statusWriter is an http.ResponseWriter that keeps only the status.
type statusWriter struct {
	h    http.Header
	code int
}

func (s *statusWriter) Header() http.Header { return s.h }
func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}
func (s *statusWriter) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(p), nil
}
