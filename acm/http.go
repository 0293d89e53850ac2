package acm

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"vodcluster/acm/auth"
	"vodcluster/acm/store"
	"vodcluster/proto/byterange"
	"vodcluster/proto/httpcors"
)

// httpHandler is the HTTP front door: GET /vod/<title>.ts (progressive
// MPEG-TS) and GET /vod/<title>/index.m3u8 (HLS) are authenticated (Basic,
// or a subscriber token: Manager.SubscriberTokens),
// admitted and redirected (302) to the node; either with a trailing
// slash is moved (301, no admission) to the URL without it; OPTIONS is answered for
// browsers (CORS: every answer allows any origin, package httpcors);
// other methods get 405 (a redirect carries a reservation, so not even
// HEAD is answered with one).
// GET /healthz answers 200 when the manager is ready to admit, 503 with
// the reason when not (healthz.go); GET /livez answers 200 while the
// process serves HTTP at all (a liveness probe: restarting the manager
// would not bring the origin or the store back).
func (m *Manager) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", m.serveHealthz)
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/vod/", m.serveVOD)
	return mux
}

// httpVODPath splits /vod/<title>.ts and /vod/<title>/index.m3u8 into the
// title and the node path after /vod/<title>.
func httpVODPath(p string) (title, rest string, ok bool) {
	p, ok = strings.CutPrefix(p, "/vod/")
	if !ok {
		return "", "", false
	}
	if t, ok := strings.CutSuffix(p, "/index.m3u8"); ok {
		return t, "/index.m3u8", idPattern.MatchString(t)
	}
	if t, ok := strings.CutSuffix(p, ".ts"); ok && !strings.Contains(t, "/") {
		return t, ".ts", idPattern.MatchString(t)
	}
	return "", "", false
}

// httpVODCanonical returns the path of the front door's HTTP URL p is
// with a trailing slash ("/vod/<title>.ts/" or
// "/vod/<title>/index.m3u8/": "/vod/<title>.ts" or
// "/vod/<title>/index.m3u8"), found false for any other path.
func httpVODCanonical(p string) (canon string, found bool) {
	c, ok := strings.CutSuffix(p, "/")
	if !ok {
		return "", false
	}
	title, rest, ok := httpVODPath(c)
	if !ok {
		return "", false
	}
	return "/vod/" + title + rest, true
}

// unauthorizedBody is the body of the front door's HTTP 401 for err
// (errUnauthorized) on a request whose Authorization header is authz:
// why, as far as a subscriber may be told (a refused password does not
// say whether the user exists). viaToken: it carried a subscriber token.
func unauthorizedBody(err error, authz string, viaToken bool) string {
	var tr tokenRefused
	scheme, _, _ := strings.Cut(authz, " ")
	switch {
	case errors.As(err, &tr):
		return "unauthorized: " + tr.Error()
	case viaToken:
		return "unauthorized: the subscriber token was refused"
	case authz == "":
		return "unauthorized: no credentials: give the subscriber's user name and password (http://user:password@host/vod/...) or a subscriber token (?token=)"
	case !strings.EqualFold(scheme, "Basic"):
		return "unauthorized: HTTP takes Basic credentials or a subscriber token, not " + clip(scheme)
	case !basicWellFormed(authz):
		return "unauthorized: malformed Basic credentials: want the base64 of user:password (RFC 7617)"
	}
	return "unauthorized: the user name and password were refused"
}

// basicWellFormed reports whether authz, an Authorization header of the
// Basic scheme, carries the base64 of a user-id, a colon and a password
// (RFC 7617 §2), as net/http's Request.BasicAuth reads it.
func basicWellFormed(authz string) bool {
	r := http.Request{Header: http.Header{"Authorization": {authz}}}
	_, _, ok := r.BasicAuth()
	return ok
}

// serveVOD answers GET with a redirect to a node, after authentication,
// the subscriber's request limit (Manager.RequestsPerUser) and admission,
// and HEAD (players probe with it, RFC 7231 §4.3.2) with
// the title's headers after authentication and entitlement only: no
// reservation, no redirect.
func (m *Manager) serveVOD(w http.ResponseWriter, r *http.Request) {
	httpcors.Header(w.Header()) // browser players on the operator's pages
	if httpcors.Options(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", httpcors.Methods)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	title, rest, ok := httpVODPath(r.URL.Path)
	if !ok {
		if canon, found := httpVODCanonical(r.URL.Path); found {
			// With a trailing slash, as an RTSP URL may end: moved to
			// the URL without it (players follow it: curl -L, ffmpeg),
			// which a playlist's relative segment names resolve against.
			if r.URL.RawQuery != "" {
				canon += "?" + r.URL.RawQuery // a subscriber token (?token=)
			}
			w.Header().Set("Location", canon)
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		http.Error(w, "not found: want /vod/<title>.ts or /vod/<title>/index.m3u8", http.StatusNotFound)
		return
	}
	ip, addr := r.RemoteAddr, r.RemoteAddr
	if h, _, e := net.SplitHostPort(addr); e == nil {
		ip = h
	}
	var user string
	var err error
	tok, viaToken := m.subscriberToken(r.Header.Get("Authorization"), r.URL.RawQuery)
	if viaToken {
		user, err = m.authenticateToken(tok, title, ip)
	} else {
		user, _, err = m.authenticate(r.Context(), r.Method, r.URL, r.Header.Get("Authorization"), ip, false)
	}
	if err == nil && r.Method == http.MethodHead {
		var t store.Title
		if t, err = m.entitled(r.Context(), user, title); err == nil {
			m.mu.Lock()
			if m.suspendedLocked(user, m.now()) {
				err = errSuspended // as the GET would be: not 200 for a title it cannot play
			}
			m.mu.Unlock()
		}
		if err == nil {
			if rest == ".ts" {
				w.Header().Set("Content-Type", "video/mp2t")
				w.Header().Set("Content-Length", strconv.FormatInt(t.SizeBytes, 10))
				w.Header().Set("Accept-Ranges", "bytes")
			} else {
				w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
			}
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	if err == nil {
		err = m.checkRequestRate(user, store.ProtoHTTP, title)
	}
	if err == nil && rest == ".ts" {
		err = m.checkRange(r.Context(), user, title, r.Header.Get("Range"), byterange.PreconditionsFirst(r.Header))
	}
	if err == nil {
		var g *grant
		g, err = m.admitTimed(r.Context(), admitRequest{User: user, Title: title, ClientIP: ip, Client: addr, Protocol: store.ProtoHTTP})
		if err == nil {
			countRequest(store.ProtoHTTP, nil)
			w.Header().Set("Location", g.HTTPScheme+"://"+g.HTTPAddr+"/s/"+g.Token+"/vod/"+title+rest)
			w.Header().Set("Cache-Control", redirectCacheControl(rest, m.TokenTTL))
			if rest == ".ts" {
				// The redirect names the subscriber's session: a
				// browser's cache must not hand it to a request made
				// with other credentials (another profile's).
				w.Header().Set("Vary", "Authorization")
			}
			w.WriteHeader(http.StatusFound)
			return
		}
	}
	if r.Context().Err() != nil {
		countRequest(store.ProtoHTTP, r.Context().Err())
		return // the client went away
	}
	if viaToken && user != "" {
		err = m.tokenSubscriberErr(err, user, ip)
	}
	countRequest(store.ProtoHTTP, err)
	if ra := m.refusalRetryAfter(err); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	switch {
	case errors.Is(err, errUnauthorized):
		var tr tokenRefused
		if errors.As(err, &tr) {
			w.Header().Add("WWW-Authenticate", auth.BearerChallenge(m.Realm, tr.reason))
		}
		w.Header().Add("WWW-Authenticate", auth.BasicChallenge(m.Realm))
		http.Error(w, unauthorizedBody(err, r.Header.Get("Authorization"), viaToken), http.StatusUnauthorized)
	case errors.Is(err, errTokenTitle):
		http.Error(w, "forbidden: the token opens another title", http.StatusForbidden)
	case errors.Is(err, errEndedByOperator):
		http.Error(w, "forbidden: the operator ended your sessions", http.StatusForbidden)
	case errors.Is(err, errSuspended):
		http.Error(w, "forbidden: suspended by the operator", http.StatusForbidden)
	case errors.Is(err, errForbidden):
		http.Error(w, "forbidden: title not in your packages", http.StatusForbidden)
	case errors.Is(err, errUserLimit):
		u := userLimited{limit: m.MaxSessionsPerUser, sessions: m.MaxSessionsPerUser}
		errors.As(err, &u)
		http.Error(w, userLimitBody(user, u), http.StatusTooManyRequests)
	case errors.Is(err, errThrottled):
		http.Error(w, "too many failed logins: try again later", http.StatusTooManyRequests)
	case errors.Is(err, errRateLimited):
		http.Error(w, "too many requests: try again later", http.StatusTooManyRequests)
	case errors.Is(err, errNoTitle):
		http.Error(w, "title not found", http.StatusNotFound)
	case errors.As(err, new(rangeRefused)):
		var rr rangeRefused
		errors.As(err, &rr)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", rr.size))
		http.Error(w, rr.Error(), http.StatusRequestedRangeNotSatisfiable)
	case errors.Is(err, errNoNodeReporting):
		http.Error(w, "no node is reporting to the manager: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errNoNodeInService), errors.Is(err, errNodesOutOfTouch):
		http.Error(w, noNodeInServiceReason(err)+": try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errNoDiskRoom):
		http.Error(w, "no node has disk room for the title: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errOverEgress):
		http.Error(w, "the title's bitrate is more than any node can stream", http.StatusServiceUnavailable)
	case errors.Is(err, errNoSource):
		http.Error(w, "no node holds the title and none can fetch it: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errOriginBusy):
		http.Error(w, "no node that may serve you holds the title yet and every origin channel is busy: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errNoBandwidth):
		http.Error(w, "not enough bandwidth: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errOriginDown):
		http.Error(w, "title not on any node and the origin is unavailable: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errNoCatalog):
		http.Error(w, "no catalog yet: the origin has not been reached: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errStoreDown), errors.Is(err, errStoreTimeout):
		http.Error(w, "the cluster's session store is unavailable: try again later", http.StatusServiceUnavailable)
	case errors.Is(err, errBOSSDown):
		http.Error(w, "the subscriber database does not answer: try again later", http.StatusServiceUnavailable)
	default:
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
	}
}

// redirectCacheControl is the Cache-Control of the front door's 302 to a
// node for rest (httpVODPath). A progressive title's (".ts") may be
// reused by the player that received it (private: never by a shared
// cache) for as long as its token lets that viewer in at the node, ttl
// (TokenTTL), whole seconds. A player that seeks in a progressive title
// asks the URL it was given again with a Range: ffmpeg's HTTP client
// (ffplay, ffprobe's duration probe) sends no credentials on that
// request, and its retry after the 401 asks from byte 0, so that its
// seek (or its probe of the title's end) read the start of the title
// instead; with the redirect cached it goes to the node, whose token
// needs no credentials. max-age comes first: ffmpeg reads the number at
// a fixed place after the header's start.
//
// An HLS playlist's is never stored: HLS players ask the node's URL for
// the segments and the playlist's reloads (hls.js, ffmpeg, GStreamer),
// and a browser that cached the redirect would send a player that asks
// the front door again (hls.js after a network error, a page that loads
// the title again) back to the node its token names for the token's
// life, a node that died, drains or ended the session, instead of being
// admitted anew.
func redirectCacheControl(rest string, ttl time.Duration) string {
	s := int64(ttl / time.Second)
	if s <= 0 || rest != ".ts" {
		return "no-store"
	}
	return fmt.Sprintf("max-age=%d, private", s)
}
