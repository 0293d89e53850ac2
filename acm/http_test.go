package acm

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"vodcluster/proto/byterange"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// noRedirect is an HTTP client that shows the front door's answers as they are.
var noRedirect = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func (e *env) get(method, path, user, pass string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, "http://"+e.m.HTTPAddr()+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func TestHTTPRedirects(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusFound || res.Header.Get("Cache-Control") != fmt.Sprintf("max-age=%d, private", int(e.m.TokenTTL/time.Second)) || res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("ts: %d %v", res.StatusCode, res.Header)
	}
	c := e.tokenOf(res.Header.Get("Location"), "http", "127.0.0.1:7080", "t1", ".ts")
	if c.Node != "n1" || c.User != "demo" {
		t.Fatalf("claims %+v", c)
	}
	res = e.get("GET", "/vod/t2/index.m3u8", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("hls: %d", res.StatusCode)
	}
	e.tokenOf(res.Header.Get("Location"), "http", "127.0.0.1:7080", "t2", "/index.m3u8")
	ss := e.sessions()
	if len(ss) != 2 || ss[0].Protocol != store.ProtoHTTP || e.reserved("n1") != 2*titleBps {
		t.Fatalf("sessions %v reserved %d", ss, e.reserved("n1"))
	}
	if res := e.get("GET", "/healthz", "", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("healthz %d", res.StatusCode)
	}
}

func TestHTTPStatuses(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{egress: titleBps})
	for _, tc := range []struct {
		name, method, path, user, pass string
		want                           int
	}{
		{"no credentials", "GET", "/vod/t1.ts", "", "", http.StatusUnauthorized},
		{"wrong password", "GET", "/vod/t1.ts", "demo", "nope", http.StatusUnauthorized},
		{"outside packages", "GET", "/vod/adult-1.ts", "kid", "kid", http.StatusForbidden},
		{"unknown title", "GET", "/vod/zzz.ts", "demo", "demo", http.StatusNotFound},
		{"unknown form", "GET", "/vod/t1.mp4", "demo", "demo", http.StatusNotFound},
		{"segment path", "GET", "/vod/t1/seg-1.ts", "demo", "demo", http.StatusNotFound},
		{"post", "POST", "/vod/t1.ts", "demo", "demo", http.StatusMethodNotAllowed},
		{"head", "HEAD", "/vod/t1.ts", "demo", "demo", http.StatusOK},
		{"head of a playlist", "HEAD", "/vod/t1/index.m3u8", "demo", "demo", http.StatusOK},
		{"head without credentials", "HEAD", "/vod/t1.ts", "", "", http.StatusUnauthorized},
		{"head outside packages", "HEAD", "/vod/adult-1.ts", "kid", "kid", http.StatusForbidden},
		{"head of an unknown title", "HEAD", "/vod/zzz.ts", "demo", "demo", http.StatusNotFound},
	} {
		res := e.get(tc.method, tc.path, tc.user, tc.pass)
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
		if tc.want == http.StatusUnauthorized && res.Header.Get("WWW-Authenticate") != `Basic realm="vodcluster"` {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, res.Header.Get("WWW-Authenticate"))
		}
	}
	// HEAD answers the title's headers and reserves nothing.
	if res := e.get("HEAD", "/vod/t1.ts", "demo", "demo"); res.Header.Get("Content-Type") != "video/mp2t" ||
		res.Header.Get("Content-Length") != fmt.Sprint(e.m.titles()["t1"].SizeBytes) || res.Header.Get("Location") != "" {
		t.Fatalf("HEAD: %v", res.Header)
	}
	if res := e.get("POST", "/vod/t1.ts", "demo", "demo"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Fatalf("POST: %d, Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
	// Browser players on another origin (hls.js on the operator's page):
	// the preflight is answered (no credentials needed for it, nothing
	// reserved), and every answer, the 401 and the 302 included, allows
	// any origin and lets the page read Location and Content-Range.
	if res := e.get("OPTIONS", "/vod/t1/index.m3u8", "", ""); res.StatusCode != http.StatusNoContent ||
		res.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	for _, auth := range [][3]string{{"", "", "t1"}, {"demo", "demo", "nothing"}} {
		res := e.get("GET", "/vod/"+auth[2]+".ts", auth[0], auth[1])
		if res.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Location") {
			t.Fatalf("GET as %q: %d without CORS headers: %v", auth[0], res.StatusCode, res.Header)
		}
	}
	// Digest is not offered over HTTP and not accepted.
	req, _ := http.NewRequest("GET", "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
	req.Header.Set("Authorization", `Digest username="demo", realm="vodcluster", nonce="`+e.m.nonces.Issue(time.Now())+`", uri="/vod/t1.ts", response="00"`)
	if res, err := noRedirect.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("digest over http: %v %v", res, err)
	}
	if e.reserved("n1") != 0 || len(e.sessions()) != 0 {
		t.Fatal("refusals left state behind")
	}
	// Full: the next one waits out the deadline, then 503 with Retry-After.
	if res := e.get("GET", "/vod/t1.ts", "demo", "demo"); res.StatusCode != http.StatusFound {
		t.Fatalf("first: %d", res.StatusCode)
	}
	start := time.Now()
	res := e.get("GET", "/vod/t2/index.m3u8", "demo", "demo")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("full: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if time.Since(start) < e.m.QueueDeadline {
		t.Fatal("503 before the queue deadline")
	}
	if e.reserved("n1") != titleBps {
		t.Fatalf("reserved %d", e.reserved("n1"))
	}
}

func TestHTTPNodeWithoutHTTPAddress(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", noHTTP: true})
	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if res.StatusCode != http.StatusServiceUnavailable || e.reserved("n1") != 0 || len(e.sessions()) != 0 {
		t.Fatalf("%d reserved %d", res.StatusCode, e.reserved("n1"))
	}
	if !strings.HasPrefix(e.describe("demo", "demo", "t1").Header["Location"][0], "rtsp://127.0.0.1:7001/") {
		t.Fatal("rtsp through the same node failed")
	}
}

// A player asking the front door's HTTP URL again for a title it is
// playing (ffmpeg does after probing and on each seek) is the same
// viewer: a new token for the same session, no second reservation. Another
// title, another protocol, or the session ended: a new admission.
func TestHTTPSameViewerOneSession(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
	n := e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	reuses := func() float64 { return counterValue(t, reusesTotal.WithLabelValues(store.ProtoHTTP)) }
	counted := reuses()
	first := e.tokenOf(e.get("GET", "/vod/t1.ts", "demo", "demo").Header.Get("Location"), "http", "127.0.0.1:7080", "t1", ".ts")
	for i := 0; i < 3; i++ {
		res := e.get("GET", "/vod/t1.ts", "demo", "demo")
		if res.StatusCode != http.StatusFound {
			t.Fatalf("again %d: %d", i, res.StatusCode)
		}
		if c := e.tokenOf(res.Header.Get("Location"), "http", "127.0.0.1:7080", "t1", ".ts"); c.Session != first.Session {
			t.Fatalf("again %d: session %s, want %s", i, c.Session, first.Session)
		}
	}
	if len(e.sessions()) != 1 || e.reserved("n1") != titleBps {
		t.Fatalf("%d sessions, %d bit/s reserved, want one viewer", len(e.sessions()), e.reserved("n1"))
	}
	// Counted, so that an operator sees players sharing sessions.
	if got := reuses() - counted; got != 3 {
		t.Errorf("vodcluster_session_reuses_total{protocol=\"http\"} went up by %v, want 3", got)
	}
	// HLS of the same title from the same address is the same viewer too.
	res := e.get("GET", "/vod/t1/index.m3u8", "demo", "demo")
	if c := e.tokenOf(res.Header.Get("Location"), "http", "127.0.0.1:7080", "t1", "/index.m3u8"); c.Session != first.Session {
		t.Fatalf("HLS of the same title: session %s", c.Session)
	}
	// Another title is another viewer; RTSP is another viewer.
	second := e.tokenOf(e.get("GET", "/vod/t2.ts", "demo", "demo").Header.Get("Location"), "http", "127.0.0.1:7080", "t2", ".ts")
	if second.Session == first.Session || len(e.sessions()) != 2 {
		t.Fatalf("another title: session %s, %d sessions", second.Session, len(e.sessions()))
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("RTSP of t1 at the cap of 2: %d", res.StatusCode)
	}
	// Once the session ended, the next request is a new admission.
	if err := n.event(first.Session, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	again := e.tokenOf(e.get("GET", "/vod/t1.ts", "demo", "demo").Header.Get("Location"), "http", "127.0.0.1:7080", "t1", ".ts")
	if again.Session == first.Session || len(e.sessions()) != 2 {
		t.Fatalf("after the end: session %s (first %s), %d sessions", again.Session, first.Session, len(e.sessions()))
	}
}

// The front door's HTTP 401 says why: no credentials (and how to give
// them), the password refused, Basic credentials that do not decode to
// user:password (they were "the password refused"), a scheme HTTP does not take, or the
// subscriber token's refusal. Every 401 said only "unauthorized", where
// curl and browser users read the body.
func TestHTTPUnauthorizedSaysWhy(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	for _, tc := range []struct{ name, authz, query, want string }{
		{"no credentials", "", "", "no credentials: give the subscriber's user name and password"},
		{"wrong password", "Basic " + base64.StdEncoding.EncodeToString([]byte("demo:nope")), "", "the user name and password were refused"},
		{"digest", `Digest username="demo"`, "", "HTTP takes Basic credentials or a subscriber token, not Digest"},
		{"not base64", "Basic !!!notbase64", "", "malformed Basic credentials"},
		{"no colon", "Basic " + base64.StdEncoding.EncodeToString([]byte("demo")), "", "malformed Basic credentials"},
		{"bad token", "Bearer not.a.token", "", "subscriber token"},
		{"empty token", "Bearer ", "", "subscriber token refused"},
	} {
		req, _ := http.NewRequest("GET", "http://"+e.m.HTTPAddr()+"/vod/t1.ts"+tc.query, nil)
		if tc.authz != "" {
			req.Header.Set("Authorization", tc.authz)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %q, want 401 saying %q", tc.name, res.StatusCode, body, tc.want)
		}
	}
}

// An HTTP GET of a progressive title whose Range asks for no byte of it
// (past its end) is answered 416 at the front door, with the title's
// size, and admits nothing: no session, no reservation, no fill on a
// node (before, the node filled the title from the origin to answer 416,
// and the session counted against the subscriber until it timed out).
// A Range with a byte in it, a suffix, or one that does not parse is
// admitted as before (the node answers it); a viewer outside the title's
// packages is refused 403 whatever the Range.
func TestHTTPRangePastTheEndAnsweredAtTheFrontDoor(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	size := e.m.titles()["t1"].SizeBytes
	getRange := func(path, user, rng string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+e.m.HTTPAddr()+path, nil)
		req.SetBasicAuth(user, user)
		req.Header.Set("Range", rng)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		res.Header.Set("X-Body", string(body))
		return res
	}
	for _, rng := range []string{fmt.Sprintf("bytes=%d-", size), fmt.Sprintf("bytes=%d-%d", size+10, size+20), "bytes=-0", fmt.Sprintf("bytes=%d-, %d-", size, size+1)} {
		res := getRange("/vod/t1.ts", "demo", rng)
		if res.StatusCode != http.StatusRequestedRangeNotSatisfiable || res.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) ||
			!strings.Contains(res.Header.Get("X-Body"), fmt.Sprintf("the title is %d bytes", size)) {
			t.Errorf("Range %q: %d, Content-Range %q, body %q", rng, res.StatusCode, res.Header.Get("Content-Range"), res.Header.Get("X-Body"))
		}
	}
	// More than 16 ranges: 416 here as at the node (admitted, the session
	// held a slot and a reservation until pause_timeout for the node's 416).
	many := "bytes=0-1"
	for k := 1; k <= byterange.MaxRanges; k++ {
		many += fmt.Sprintf(",%d-%d", 10*k, 10*k+1)
	}
	if res := getRange("/vod/t1.ts", "demo", many); res.StatusCode != http.StatusRequestedRangeNotSatisfiable ||
		!strings.Contains(res.Header.Get("X-Body"), "more than 16 byte ranges") {
		t.Errorf("17 ranges: %d, body %q; want 416, more than 16 byte ranges", res.StatusCode, res.Header.Get("X-Body"))
	}
	if len(e.sessions()) != 0 || e.reserved("n1") != 0 {
		t.Fatalf("416s left sessions %v, %d bit/s reserved", e.sessions(), e.reserved("n1"))
	}
	if res := getRange("/vod/adult-1.ts", "kid", "bytes=999999999999-"); res.StatusCode != http.StatusForbidden {
		t.Errorf("outside packages, past the end: %d, want 403", res.StatusCode)
	}
	e.m.mu.Lock()
	if e.m.suspended == nil {
		e.m.suspended = map[string]suspension{}
	}
	e.m.suspended["kid"] = suspension{Until: time.Now().Add(time.Hour)}
	e.m.mu.Unlock()
	if res := getRange("/vod/t1.ts", "kid", fmt.Sprintf("bytes=%d-", size)); res.StatusCode != http.StatusForbidden {
		t.Errorf("suspended, past the end: %d, want 403", res.StatusCode)
	}
	// A suspended subscriber's HEAD is refused as its GET is (it was 200).
	head, _ := http.NewRequest(http.MethodHead, "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
	head.SetBasicAuth("kid", "kid")
	if res, err := noRedirect.Do(head); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("suspended HEAD: %v %v, want 403", res, err)
	} else {
		res.Body.Close()
	}
	// With If-Range the node may answer the whole title (RFC 9110 §13.1.5):
	// admitted.
	req, _ := http.NewRequest("GET", "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
	req.SetBasicAuth("demo", "demo")
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", size))
	req.Header.Set("If-Range", `"an-older-copy"`)
	if res, err := noRedirect.Do(req); err != nil || res.StatusCode != http.StatusFound {
		t.Fatalf("past the end with If-Range: %v %v, want 302", res, err)
	} else {
		res.Body.Close()
	}
	// So with an If-Match the node fails (412, RFC 9110 §13.2.2: before
	// the Range); it was 416 here. If-Match: * holds: 416 as without.
	for _, c := range []struct {
		im   string
		want int
	}{{`"nope"`, http.StatusFound}, {"*", http.StatusRequestedRangeNotSatisfiable}} {
		req.Header.Del("If-Range")
		req.Header.Set("If-Match", c.im)
		if res, err := noRedirect.Do(req); err != nil || res.StatusCode != c.want {
			t.Fatalf("past the end with If-Match: %s: %v %v, want %d", c.im, res, err, c.want)
		} else {
			res.Body.Close()
		}
	}
	for i, rng := range []string{"bytes=0-", fmt.Sprintf("bytes=%d-", size-1), "bytes=-500", fmt.Sprintf("bytes=%d-, 0-1", size), "bytes=x-y", "items=5-"} {
		if res := getRange("/vod/t1.ts", "demo", rng); res.StatusCode != http.StatusFound {
			t.Errorf("Range %q: %d, want 302 (admitted)", rng, res.StatusCode)
		}
		if n := len(e.sessions()); n != 1 {
			t.Fatalf("after %d admitted ranges: %d sessions", i+1, n)
		}
	}
}
