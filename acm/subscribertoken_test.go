package acm

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/golang-jwt/jwt/v5"

	"vodcluster/acm/auth"
)

var portalSecret = []byte("portal-secret-0123456789abcdef-0123")

// withTokens configures the front door to accept the portal's HS256
// subscriber tokens.
func withTokens(m *Manager) {
	v, err := auth.NewSubscriberTokens(auth.SubscriberTokenConfig{HMACSecret: portalSecret, Issuer: "portal"})
	if err != nil {
		panic(err)
	}
	m.SubscriberTokens = v
}

// portalToken signs a subscriber token for sub, good for a minute, with
// the title and ip claims when set.
func portalToken(t *testing.T, sub, title, ip string, exp time.Duration) string {
	t.Helper()
	c := auth.SubscriberClaims{Title: title, IP: ip, RegisteredClaims: jwt.RegisteredClaims{
		Subject: sub, Issuer: "portal", ExpiresAt: jwt.NewNumericDate(time.Now().Add(exp))}}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(portalSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// httpGet sends GET (with the Authorization value when set) to the front
// door without following the redirect.
func httpGet(t *testing.T, e *env, path, authz string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+e.m.HTTPAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	cl := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r
}

// TestSubscriberTokens: a player with the portal's token in the URL or as
// Bearer is admitted without a password over RTSP and HTTP, and the
// token does not travel on to the node; a token that does not verify is
// 401 with a Bearer challenge naming why, one for another title 403, one
// bound to another address or naming a subscriber the BOSS does not know
// 401, one for a title outside the subscriber's packages 403.
func TestSubscriberTokens(t *testing.T) {
	e := newManager(t, "", withTokens)
	e.startNode("n1", nodeOpts{})
	c := e.dialRTSP()

	ok := portalToken(t, "demo", "", "", time.Minute)
	res := c.mustDo(base.Describe, "/vod/t1?token="+ok, nil)
	if res.StatusCode != base.StatusFound {
		t.Fatalf("RTSP ?token=: %d %v", res.StatusCode, res.Header)
	}
	loc := res.Header["Location"][0]
	if strings.Contains(loc, "?") || strings.Contains(loc, ok) {
		t.Fatalf("the subscriber token travels to the node: %s", loc)
	}
	e.tokenOf(loc, "rtsp", "127.0.0.1:1", "t1", "")
	res = e.dialRTSP().mustDo(base.Describe, "/vod/t2", base.Header{"Authorization": base.HeaderValue{"Bearer " + ok}})
	if res.StatusCode != base.StatusFound {
		t.Fatalf("RTSP Bearer: %d", res.StatusCode)
	}

	type refusal struct {
		tok, title string
		status     base.StatusCode
		why        string // in the Bearer challenge's error_description
	}
	for name, r := range map[string]refusal{
		"expired":          {portalToken(t, "demo", "", "", -time.Hour), "t1", base.StatusUnauthorized, "expired"},
		"forged":           {ok[:len(ok)-4] + "AAAA", "t1", base.StatusUnauthorized, "signature"},
		"another address":  {portalToken(t, "demo", "", "192.0.2.7", time.Minute), "t1", base.StatusUnauthorized, "address"},
		"another title":    {portalToken(t, "demo", "t2", "", time.Minute), "t1", base.StatusForbidden, ""},
		"unknown user":     {portalToken(t, "nobody", "", "", time.Minute), "t1", base.StatusUnauthorized, "not known"},
		"not entitled":     {portalToken(t, "kid", "", "", time.Minute), "adult-1", base.StatusForbidden, ""},
		"garbage in query": {"%zz", "t1", base.StatusUnauthorized, ""},
	} {
		res := e.dialRTSP().mustDo(base.Describe, "/vod/"+r.title+"?token="+r.tok, nil)
		if res.StatusCode != r.status {
			t.Errorf("%s: %d, want %d", name, res.StatusCode, r.status)
			continue
		}
		if r.why != "" {
			wa := res.Header["WWW-Authenticate"]
			if len(wa) == 0 || !strings.HasPrefix(wa[0], `Bearer realm="vodcluster", error="invalid_token"`) || !strings.Contains(wa[0], r.why) {
				t.Errorf("%s: challenge %q, want Bearer invalid_token naming %q", name, wa, r.why)
			}
		}
	}
	// A malformed parameter beside the token does not hide it.
	if res := e.dialRTSP().mustDo(base.Describe, "/vod/t3?x=%zz&token="+ok+"&y=a;b", nil); res.StatusCode != base.StatusFound {
		t.Fatalf("token beside malformed parameters: %d", res.StatusCode)
	}
	// A token bound to the player's own address, and for its title, plays.
	if res := e.dialRTSP().mustDo(base.Describe, "/vod/t3?token="+portalToken(t, "demo", "t3", "127.0.0.1", time.Minute), nil); res.StatusCode != base.StatusFound {
		t.Fatalf("a token bound to the client and title: %d", res.StatusCode)
	}

	// HTTP: progressive and HLS, query and Bearer.
	for _, p := range []string{"/vod/t1.ts?token=" + ok, "/vod/t2/index.m3u8?token=" + url.QueryEscape(ok)} {
		r := httpGet(t, e, p, "")
		if r.StatusCode != http.StatusFound || strings.Contains(r.Header.Get("Location"), ok) || strings.Contains(r.Header.Get("Location"), "?") {
			t.Fatalf("HTTP %s: %d %q", p, r.StatusCode, r.Header.Get("Location"))
		}
	}
	if r := httpGet(t, e, "/vod/t3.ts", "Bearer "+ok); r.StatusCode != http.StatusFound {
		t.Fatalf("HTTP Bearer: %d", r.StatusCode)
	}
	r := httpGet(t, e, "/vod/t1.ts?token="+portalToken(t, "demo", "", "", -time.Hour), "")
	if wa := r.Header.Values("WWW-Authenticate"); r.StatusCode != http.StatusUnauthorized || len(wa) != 2 ||
		!strings.HasPrefix(wa[0], "Bearer ") || !strings.Contains(wa[0], "expired") || !strings.HasPrefix(wa[1], "Basic ") {
		t.Fatalf("HTTP expired token: %d %q", r.StatusCode, wa)
	}
	// A token naming a subscriber the BOSS does not know: its 401 names
	// the token, and asks for no password first.
	r = httpGet(t, e, "/vod/t1.ts?token="+portalToken(t, "nobody", "", "", time.Minute), "")
	if wa := r.Header.Values("WWW-Authenticate"); r.StatusCode != http.StatusUnauthorized || len(wa) != 2 ||
		!strings.HasPrefix(wa[0], "Bearer ") || !strings.Contains(wa[0], "not known") {
		t.Fatalf("HTTP token of an unknown subscriber: %d %q", r.StatusCode, wa)
	}
	if r := httpGet(t, e, "/vod/t1.ts?token="+portalToken(t, "demo", "t2", "", time.Minute), ""); r.StatusCode != http.StatusForbidden {
		t.Fatalf("HTTP token for another title: %d", r.StatusCode)
	}
	// Passwords still work next to tokens.
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("Basic next to tokens: %d", res.StatusCode)
	}
}

// TestSubscriberTokensNotConfigured: without a portal key, a Bearer
// header is refused with a reason, and a token in the URL is not
// looked at (the request is one without credentials).
func TestSubscriberTokensNotConfigured(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	tok := portalToken(t, "demo", "", "", time.Minute)
	res := e.dialRTSP().mustDo(base.Describe, "/vod/t1", base.Header{"Authorization": base.HeaderValue{"Bearer " + tok}})
	if wa := res.Header["WWW-Authenticate"]; res.StatusCode != base.StatusUnauthorized || !strings.Contains(wa[0], "not accepted") {
		t.Fatalf("Bearer without tokens configured: %d %q", res.StatusCode, wa)
	}
	ch0, _ := counts("rtsp")
	res = e.dialRTSP().mustDo(base.Describe, "/vod/t1?token="+tok, nil)
	if wa := res.Header["WWW-Authenticate"]; res.StatusCode != base.StatusUnauthorized || !strings.HasPrefix(wa[0], "Digest ") {
		t.Fatalf("?token= without tokens configured: %d %q", res.StatusCode, wa)
	}
	if ch, _ := counts("rtsp"); ch != ch0+1 {
		t.Fatalf("a request with only an ignored token counted challenged +%v, want +1", ch-ch0)
	}
}

// TestFFprobeWithSubscriberTokenInURL: ffprobe given a title URL with the
// portal's token (no user, no password) follows the front door's
// redirect to the node.
func TestFFprobeWithSubscriberTokenInURL(t *testing.T) {
	ffprobe := needTool(t, "ffprobe")
	e := newManager(t, "", withTokens)
	cs := startCapture(t)
	e.startNode("n1", nodeOpts{rtsp: cs.addr()})
	out := runClient(t, ffprobe, "-v", "debug", "-rtsp_transport", "tcp",
		"rtsp://"+e.m.RTSPAddr()+"/vod/t1?token="+portalToken(t, "demo", "t1", "", time.Minute))
	e.checkRedirect(cs, "t1")
	if u := e.users.used(); len(u) != 0 {
		t.Fatalf("a password check was made (%v) for a token\n%s", u, out)
	}
	if len(e.sessions()) != 1 {
		t.Fatalf("sessions %v", e.sessions())
	}
}
