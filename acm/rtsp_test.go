package acm

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

func TestRTSPDescribeRedirectsWithToken(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusFound || res.StatusMessage != "Moved Temporarily" {
		t.Fatalf("status %d %s", res.StatusCode, res.StatusMessage)
	}
	c := e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:7001", "t1", "")
	if c.Node != "n1" || c.User != "demo" || c.Bitrate != titleBps || c.Client != "127.0.0.1" || len(c.Session) != 32 {
		t.Fatalf("claims %+v", c)
	}
	if exp := c.ExpiresAt.Sub(c.IssuedAt.Time); exp != DefaultTokenTTL {
		t.Fatalf("token lifetime %v", exp)
	}
	if got := e.reserved("n1"); got != titleBps {
		t.Fatalf("reserved %d bit/s, want %d", got, titleBps)
	}
	ss := e.sessions()
	if len(ss) != 1 || ss[0].SessionId != c.Session || ss[0].State != store.StateAdmitted || ss[0].NodeId != "n1" ||
		ss[0].Protocol != store.ProtoRTSP || ss[0].User != "demo" || ss[0].TitleId != "t1" || ss[0].BitrateBps != titleBps ||
		!strings.HasPrefix(ss[0].ClientAddr, "127.0.0.1:") {
		t.Fatalf("sessions %+v", ss)
	}
	// The session is in the store before the client has its redirect.
	if s, err := e.m.st.Session(context.Background(), c.Session); err != nil || s.State != store.StateAdmitted {
		t.Fatalf("stored session %+v %v", s, err)
	}
}

func TestRTSPSetupWithoutDescribeKeepsControlPath(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	c := e.dialRTSP()
	h := basicHeader("demo", "demo")
	h["Transport"] = base.HeaderValue{"RTP/AVP;unicast;client_port=5000-5001"}
	res := c.mustDo(base.Setup, "/vod/t2/trackID=0", h)
	if res.StatusCode != base.StatusFound {
		t.Fatalf("SETUP without session: %d", res.StatusCode)
	}
	e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:7001", "t2", "/trackID=0")
	res = c.mustDo(base.Play, "/vod/t3", basicHeader("demo", "demo"))
	if res.StatusCode != base.StatusMethodNotValidInThisState {
		t.Fatalf("PLAY without session: %d, want 455 (and no reservation)", res.StatusCode)
	}
	h = basicHeader("demo", "demo")
	h["Session"] = base.HeaderValue{"12345678"}
	if res := c.mustDo(base.Play, "/vod/t3", h); res.StatusCode != base.StatusSessionNotFound {
		t.Fatalf("PLAY with a node's session: %d", res.StatusCode)
	}
}

func TestRTSPStatuses(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	c := e.dialRTSP()
	res := c.mustDo(base.Options, "/vod/t1", nil)
	if res.StatusCode != base.StatusOK || !strings.Contains(res.Header["Public"][0], "DESCRIBE") {
		t.Fatalf("OPTIONS: %d %v", res.StatusCode, res.Header)
	}
	for _, tc := range []struct {
		name   string
		method base.Method
		path   string
		h      base.Header
		want   base.StatusCode
	}{
		{"no credentials", base.Describe, "/vod/t1", nil, base.StatusUnauthorized},
		{"wrong basic password", base.Describe, "/vod/t1", basicHeader("demo", "wrong"), base.StatusUnauthorized},
		{"unknown user", base.Describe, "/vod/t1", basicHeader("ghost", "demo"), base.StatusUnauthorized},
		{"garbage authorization", base.Describe, "/vod/t1", base.Header{"Authorization": {"Negotiate abc"}}, base.StatusUnauthorized},
		{"unknown title", base.Describe, "/vod/nope", basicHeader("demo", "demo"), base.StatusNotFound},
		{"not under /vod", base.Describe, "/live/t1", basicHeader("demo", "demo"), base.StatusNotFound},
		{"bad title id", base.Describe, "/vod/a%20b", basicHeader("demo", "demo"), base.StatusNotFound},
		{"outside packages", base.Describe, "/vod/adult-1", basicHeader("kid", "kid"), base.StatusForbidden},
		{"describe accepting only html", base.Describe, "/vod/t1", base.Header{"Authorization": basicHeader("demo", "demo")["Authorization"], "Accept": {"text/html"}}, base.StatusNotAcceptable},
		{"keepalive", base.GetParameter, "/vod/t1", nil, base.StatusOK},
		{"teardown of a node's session", base.Teardown, "/vod/t1", base.Header{"Session": {"abc"}}, base.StatusSessionNotFound},
		{"pause without session", base.Pause, "/vod/t1", nil, base.StatusMethodNotValidInThisState},
		{"announce", base.Announce, "/vod/t1", nil, base.StatusMethodNotAllowed},
		{"record", base.Record, "/vod/t1", nil, base.StatusMethodNotAllowed},
		{"redirect (server to client)", base.Method("REDIRECT"), "/vod/t1", nil, base.StatusMethodNotAllowed}, // was 501: the node and docs/delivery.md say 405
		{"play_notify (server to client)", base.Method("PLAY_NOTIFY"), "/vod/t1", nil, base.StatusMethodNotAllowed},
		{"unknown method", base.Method("FLY"), "/vod/t1", nil, base.StatusNotImplemented},
	} {
		res := c.mustDo(tc.method, tc.path, tc.h)
		if res.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, res.StatusCode, tc.want)
		}
		if tc.want == base.StatusUnauthorized {
			wa := res.Header["WWW-Authenticate"]
			if len(wa) != 2 || !strings.HasPrefix(wa[0], `Digest realm="vodcluster", nonce="`) || wa[1] != `Basic realm="vodcluster"` {
				t.Errorf("%s: WWW-Authenticate %q", tc.name, wa)
			}
			// credentials asked for: the plain challenge; refused: said
			want := "Unauthorized (credentials refused)"
			if tc.h == nil {
				want = "Unauthorized"
			}
			if res.StatusMessage != want {
				t.Errorf("%s: status line %q, want %q", tc.name, res.StatusMessage, want)
			}
		}
	}
	if got := e.reserved("n1"); got != 0 {
		t.Fatalf("refusals left %d bit/s reserved", got)
	}
	if len(e.sessions()) != 0 {
		t.Fatal("refusals left sessions")
	}
	// A request without CSeq is a 400 and the connection stays usable
	// for nothing else: the server closes it.
	u, _ := base.ParseURL(c.url("/vod/t1"))
	c.c.WriteRequest(&base.Request{Method: base.Options, URL: u, Header: base.Header{}})
	if res, err := c.c.ReadResponse(); err != nil || res.StatusCode != base.StatusBadRequest || res.StatusMessage != "Bad Request (want one CSeq header)" {
		t.Fatalf("no CSeq: %v %v", res, err)
	}
}

func TestRTSPMalformedRequestGets400(t *testing.T) {
	e := newManager(t, "", nil)
	c := e.dialRTSP()
	c.nc.Write([]byte("DESCRIBE not a url at all RTSP/1.0\r\nCSeq: 1\r\n\r\n"))
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := c.c.ReadResponse()
	if err != nil || res.StatusCode != base.StatusBadRequest {
		t.Fatalf("%v %v", res, err)
	}
	// The status says why, as the node's answer does: it was a bare
	// "400 Bad Request" whatever was wrong.
	for _, tc := range []struct{ req, want string }{
		{"DESCRIBE rtsp://h/vod/t1 RTSP/1.0\r\nCSeq: 2\r\nContent-Length: -5\r\n\r\n", "Bad Request (invalid Content-Length)"},
		{"DESCRIBE rtsp://h/vod/t1 RTSP/1.0\r\nCSeq: 3\r\nX: " + strings.Repeat("a", 70000) + "\r\n\r\n", "Bad Request (request head too large)"},
		{"DESCRIBE rtsp://h/vod/t1 RTSP/2.0\r\nCSeq: 4\r\n\r\n", "RTSP Version Not Supported (only RTSP/1.0 is served)"},
	} {
		c := e.dialRTSP()
		c.nc.Write([]byte(tc.req))
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if res, err := c.c.ReadResponse(); err != nil || res.StatusMessage != tc.want {
			t.Errorf("%.40q: %v %v, want %q", tc.req, res, err, tc.want)
		}
	}
	// The server must still serve others.
	if res := e.dialRTSP().mustDo(base.Options, "/", nil); res.StatusCode != base.StatusOK {
		t.Fatalf("after garbage: %d", res.StatusCode)
	}
}

// digestHeader builds the Authorization a client computes for a challenge
// nonce (with qop "auth": the nonce's first request, nc 1).
func digestHeader(user, pass, realm, nonce, method, uri, qop string) base.Header {
	nc := ""
	if qop != "" {
		nc = "00000001"
	}
	return digestHeaderNC(user, pass, realm, nonce, method, uri, nc)
}

// digestHeaderNC builds the Authorization of the nc-th request (8 hex
// digits; "": no qop) with nonce.
func digestHeaderNC(user, pass, realm, nonce, method, uri, nc string) base.Header {
	d := &boss.DigestResponse{Username: user, Realm: realm, Nonce: nonce, URI: uri, Method: method}
	v := `Digest username="` + user + `", realm="` + realm + `", nonce="` + nonce + `", uri="` + uri + `"`
	if nc != "" {
		d.QOP, d.NC, d.CNonce = "auth", nc, "c0ffee"
		v += `, qop=auth, nc=` + nc + `, cnonce="c0ffee"`
	}
	v += `, response="` + d.Expected(boss.HA1(user, realm, pass)) + `"`
	return base.Header{"Authorization": base.HeaderValue{v}}
}

func nonceOf(t *testing.T, res *base.Response) string {
	t.Helper()
	wa := res.Header["WWW-Authenticate"]
	if len(wa) == 0 {
		t.Fatalf("no challenge in %d", res.StatusCode)
	}
	_, rest, _ := strings.Cut(wa[0], `nonce="`)
	n, _, _ := strings.Cut(rest, `"`)
	return n
}

func TestRTSPDigest(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	c := e.dialRTSP()
	nonce := nonceOf(t, c.mustDo(base.Describe, "/vod/t1", nil))
	uri := c.url("/vod/t1")
	for _, qop := range []string{"", "auth"} {
		if res := c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "demo", "vodcluster", nonce, "DESCRIBE", uri, qop)); res.StatusCode != base.StatusFound {
			t.Fatalf("digest qop=%q: %d", qop, res.StatusCode)
		}
		res := c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "wrong", "vodcluster", nonce, "DESCRIBE", uri, qop))
		if res.StatusCode != base.StatusUnauthorized || strings.Contains(res.Header["WWW-Authenticate"][0], "stale") {
			t.Fatalf("wrong digest qop=%q: %d %v", qop, res.StatusCode, res.Header["WWW-Authenticate"])
		}
	}
	// A response computed for another resource is refused.
	if res := c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "demo", "vodcluster", nonce, "DESCRIBE", c.url("/vod/t2"), "")); res.StatusCode != base.StatusUnauthorized {
		t.Fatalf("digest for another uri: %d", res.StatusCode)
	}
	// A nonce of another cluster key.
	other := NewNoncesForTest([]byte("some-other-cluster-secret"))
	res := c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "demo", "vodcluster", other.Issue(time.Now()), "DESCRIBE", uri, "auth"))
	if res.StatusCode != base.StatusUnauthorized || strings.Contains(res.Header["WWW-Authenticate"][0], "stale=true") {
		t.Fatalf("foreign nonce: %d %v", res.StatusCode, res.Header["WWW-Authenticate"])
	}
	// An expired nonce of ours: 401 with stale=true, and the fresh nonce works.
	old := e.m.nonces.Issue(time.Now().Add(-e.m.nonces.TTL() - time.Minute))
	res = c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "demo", "vodcluster", old, "DESCRIBE", uri, "auth"))
	if res.StatusCode != base.StatusUnauthorized || !strings.Contains(res.Header["WWW-Authenticate"][0], "stale=true") {
		t.Fatalf("expired nonce: %d %v", res.StatusCode, res.Header["WWW-Authenticate"])
	}
	fresh := nonceOf(t, res)
	// An expired nonce with a wrong response: no stale, a plain refusal.
	res = c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "wrong", "vodcluster", old, "DESCRIBE", uri, "auth"))
	if res.StatusCode != base.StatusUnauthorized || strings.Contains(res.Header["WWW-Authenticate"][0], "stale") {
		t.Fatalf("expired nonce, wrong password: %d %v", res.StatusCode, res.Header["WWW-Authenticate"])
	}
	if res := c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "demo", "vodcluster", fresh, "DESCRIBE", uri, "auth")); res.StatusCode != base.StatusFound {
		t.Fatalf("after stale: %d", res.StatusCode)
	}
	if got := len(e.sessions()); got != 1 { // one connection, one title: one viewer
		t.Fatalf("%d sessions, want 1 admitted", got)
	}
}

func TestQueueDeadlineThen453(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{egress: titleBps})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("first: %d", res.StatusCode)
	}
	start := time.Now()
	res := e.describe("demo", "demo", "t2")
	if res.StatusCode != base.StatusNotEnoughBandwidth || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("second: %d, Retry-After %v", res.StatusCode, res.Header["Retry-After"])
	}
	if waited := time.Since(start); waited < e.m.QueueDeadline {
		t.Fatalf("refused after %v, before the queue deadline %v", waited, e.m.QueueDeadline)
	}
	if got := e.reserved("n1"); got != titleBps {
		t.Fatalf("reserved %d", got)
	}
	if e.queued() != 0 {
		t.Fatal("refused request still queued")
	}
}

func TestReleaseDuringWaitAdmits(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 10 * time.Second })
	n := e.startNode("n1", nodeOpts{egress: titleBps, rtsp: "127.0.0.1:7001"})
	first := e.tokenOf(e.describe("demo", "demo", "t1").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t1", "")
	got := make(chan *base.Response, 1)
	go func() {
		c := e.dialRTSP()
		res, err := c.do(base.Describe, "/vod/t2", basicHeader("demo", "demo"))
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	waitFor(t, 5*time.Second, "the second request to queue", func() bool { return e.queued() == 1 })
	// Meanwhile others still get answers at once.
	if res := e.dialRTSP().mustDo(base.Options, "/", nil); res.StatusCode != base.StatusOK {
		t.Fatal("OPTIONS blocked behind a waiting request")
	}
	if err := n.event(first.Session, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-got:
		if res == nil || res.StatusCode != base.StatusFound {
			t.Fatalf("waiting request: %v", res)
		}
		e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:7001", "t2", "")
	case <-time.After(waitForMin):
		t.Fatal("release did not admit the waiting request")
	}
	if got := e.reserved("n1"); got != titleBps {
		t.Fatalf("reserved %d", got)
	}
}

func TestDisconnectLeavesQueue(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 10 * time.Second })
	n := e.startNode("n1", nodeOpts{egress: titleBps, rtsp: "127.0.0.1:7001"})
	first := e.tokenOf(e.describe("demo", "demo", "t1").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t1", "")
	c := e.dialRTSP()
	u, _ := base.ParseURL(c.url("/vod/t2"))
	h := basicHeader("demo", "demo")
	h["CSeq"] = base.HeaderValue{"1"}
	if err := c.c.WriteRequest(&base.Request{Method: base.Describe, URL: u, Header: h}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the request to queue", func() bool { return e.queued() == 1 })
	c.nc.Close()
	waitFor(t, 5*time.Second, "the request to leave the queue", func() bool { return e.queued() == 0 })
	// The freed capacity must not go to the departed client.
	if err := n.event(first.Session, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "reservation released", func() bool { return e.reserved("n1") == 0 })
	if len(e.sessions()) != 0 {
		t.Fatalf("sessions %v", e.sessions())
	}
}

// TestRTSPStarAndEscapedRest: DESCRIBE and SETUP of "*" (no title) are
// 404, and the server keeps serving (they crashed the manager); a path
// with more than a track after the title (here an encoded CR LF) is 404,
// not a redirect that could carry it into the response's headers.
func TestRTSPStarAndEscapedRest(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	for _, method := range []string{"DESCRIBE", "SETUP", "PLAY", "OPTIONS"} {
		c := e.dialRTSP()
		fmt.Fprintf(c.nc, "%s * RTSP/1.0\r\nCSeq: 7\r\nAuthorization: Basic ZGVtbzpkZW1v\r\n\r\n", method)
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		res, err := c.c.ReadResponse()
		if err != nil || res.StatusCode >= 500 || (method != "OPTIONS" && res.StatusCode == base.StatusFound) {
			t.Fatalf("%s *: %v %v", method, res, err)
		}
	}
	c := e.dialRTSP()
	fmt.Fprintf(c.nc, "DESCRIBE rtsp://%s/vod/t1/x%%0d%%0aX-Injected:%%20yes%%0d%%0a RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Basic ZGVtbzpkZW1v\r\n\r\n", e.m.RTSPAddr())
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := c.c.ReadResponse()
	if err != nil || res.StatusCode != base.StatusNotFound {
		t.Fatalf("DESCRIBE with an encoded CR LF: %v %v", res, err)
	}
	if _, ok := res.Header["X-Injected"]; ok || len(e.sessions()) != 0 {
		t.Fatalf("headers %v, sessions %v", res.Header, e.sessions())
	}
}

// TestRTSPUnreadableRequests: what is not a well-formed RTSP/1.0 request
// is answered at once (400, 505 for another version), with its CSeq when
// it has one, and the connection closed; it does not wait for a
// delimiter until the idle timeout.
func TestRTSPUnreadableRequests(t *testing.T) {
	e := newManager(t, "", nil)
	for _, tc := range []struct {
		name, raw string
		code      base.StatusCode
		cseq      string
	}{
		{"garbage", "GARBAGE\r\n\r\n", base.StatusBadRequest, ""},
		{"CR inside a header line", "OPTIONS * RTSP/1.0\r\nCSeq: 1\rX: y\r\n\r\n", base.StatusBadRequest, ""},
		{"RTSP 2.0", "OPTIONS * RTSP/2.0\r\nCSeq: 5\r\n\r\n", base.StatusRTSPVersionNotSupported, "5"},
		{"HTTP", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", base.StatusBadRequest, ""},
	} {
		c := e.dialRTSP()
		io.WriteString(c.nc, tc.raw)
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		res, err := c.c.ReadResponse()
		if err != nil || res.StatusCode != tc.code {
			t.Errorf("%s: %v %v, want %d", tc.name, res, err, tc.code)
			continue
		}
		if got := res.Header["CSeq"]; tc.cseq != "" && (len(got) != 1 || got[0] != tc.cseq) {
			t.Errorf("%s: CSeq %v, want %s", tc.name, got, tc.cseq)
		}
		if _, err := c.nc.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: connection not closed: %v", tc.name, err)
		}
	}
	// Lines ended by LF alone are read (RFC 2326 §4), and the connection
	// serves the next request.
	c := e.dialRTSP()
	io.WriteString(c.nc, "OPTIONS * RTSP/1.0\nCSeq: 1\n\nOPTIONS * RTSP/1.0\r\nCSeq: 2\n\n")
	for _, cseq := range []string{"1", "2"} {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		res, err := c.c.ReadResponse()
		if err != nil || res.StatusCode != base.StatusOK || len(res.Header["CSeq"]) != 1 || res.Header["CSeq"][0] != cseq {
			t.Fatalf("OPTIONS with LF-only lines, CSeq %s: %v %v", cseq, res, err)
		}
	}
}

// TestRTSPRepeatedDescribeOneAdmission: a DESCRIBE (or SETUP) repeated on
// one connection for a title whose viewer has not reached its node gets a
// new token for the same session, not a second admission; another title,
// or another connection, is another viewer.
func TestRTSPRepeatedDescribeOneAdmission(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.MaxSessionsPerUser = 2 })
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	c := e.dialRTSP()
	var sid string
	for i := range 4 {
		method := base.Describe
		if i == 3 {
			method = base.Setup
		}
		h := basicHeader("demo", "demo")
		h["Transport"] = base.HeaderValue{"RTP/AVP/TCP;unicast"}
		res := c.mustDo(method, "/vod/t1", h)
		if res.StatusCode != base.StatusFound {
			t.Fatalf("request %d: %d", i, res.StatusCode)
		}
		got := e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:7001", "t1", "").Session
		if sid == "" {
			sid = got
		} else if got != sid {
			t.Fatalf("request %d on the same connection: session %s, want %s", i, got, sid)
		}
	}
	if n := len(e.sessions()); n != 1 {
		t.Fatalf("%d sessions after four requests on one connection, want 1", n)
	}
	if got := e.reserved("n1"); got != titleBps {
		t.Fatalf("reserved %d bit/s, want one title's", got)
	}
	if res := c.mustDo(base.Describe, "/vod/t2", basicHeader("demo", "demo")); res.StatusCode != base.StatusFound {
		t.Fatalf("another title: %d", res.StatusCode)
	}
	if res := e.dialRTSP().mustDo(base.Describe, "/vod/t1", basicHeader("demo", "demo")); res.StatusCode != base.StatusForbidden {
		t.Fatalf("a third viewer on another connection: %d, want 403 (limit 2)", res.StatusCode)
	}
}

// TestRTSPRequireAndEncodedTitle: a Require header is 551 with
// Unsupported before any admission (the node would refuse it after one);
// a title with percent-encoded unreserved characters is the same title;
// 501 lists the methods served.
func TestRTSPRequireAndEncodedTitle(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	c := e.dialRTSP()
	h := basicHeader("demo", "demo")
	h["Require"] = base.HeaderValue{"com.example.foo"}
	res := c.mustDo(base.Describe, "/vod/t1", h)
	if res.StatusCode != base.StatusOptionNotSupported || len(res.Header["Unsupported"]) != 1 || res.Header["Unsupported"][0] != "com.example.foo" {
		t.Fatalf("Require: %d %v", res.StatusCode, res.Header)
	}
	if len(e.sessions()) != 0 {
		t.Fatal("a request refused for its Require admitted")
	}
	res = c.mustDo(base.Describe, "/vod/%74%31", basicHeader("demo", "demo")) // "t1"
	if res.StatusCode != base.StatusFound {
		t.Fatalf("percent-encoded title: %d", res.StatusCode)
	}
	e.tokenOf(res.Header["Location"][0], "rtsp", "127.0.0.1:7001", "t1", "")
	if res := c.mustDo(base.Method("FLY"), "/vod/t1", nil); res.StatusCode != base.StatusNotImplemented || len(res.Header["Public"]) != 1 {
		t.Fatalf("unknown method: %d %v", res.StatusCode, res.Header)
	}
}
