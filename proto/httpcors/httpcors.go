package httpcors

import "net/http"

// Methods are the methods the front door and the nodes answer on their
// video paths, for Allow and Access-Control-Allow-Methods.
const Methods = "GET, HEAD, OPTIONS"

// allowHeaders are the request headers a player may send across origins
// (Authorization: Basic or a subscriber token as Bearer; Range: byte
// ranges of progressive MPEG-TS; If-Range, If-None-Match: a download
// resumed, or a segment revalidated, against its ETag). "*" would not
// cover Authorization.
const allowHeaders = "Authorization, Range, If-Range, If-None-Match"

// exposeHeaders are the response headers a player's script may read past
// the CORS-safelisted ones (byte ranges, the copy's ETag a resumed
// download names in If-Range, the redirect's target, why a request was
// refused and when to come back).
const exposeHeaders = "Content-Length, Content-Range, Accept-Ranges, ETag, Location, Retry-After, WWW-Authenticate"

// maxAge is how long a browser may reuse a preflight's answer, seconds.
const maxAge = "600"

// Header sets the CORS headers of an answer to any origin on h.
func Header(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", exposeHeaders)
}

// Options answers r when it is an OPTIONS request (a browser's preflight,
// or a client asking what the path allows): 204 with Allow and the CORS
// headers, and reports whether it answered.
func Options(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodOptions {
		return false
	}
	h := w.Header()
	Header(h)
	h.Set("Allow", Methods)
	h.Set("Access-Control-Allow-Methods", Methods)
	h.Set("Access-Control-Allow-Headers", allowHeaders)
	h.Set("Access-Control-Max-Age", maxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}
