package acm

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	dto "github.com/prometheus/client_model/go"
)

// frontDoorCount reads the front door's count of protocol and outcome.
func frontDoorCount(protocol, outcome string) float64 {
	var m dto.Metric
	if err := requestsTotal.WithLabelValues(protocol, outcome).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// counts snapshots the challenged and unauthorized counts of protocol.
func counts(protocol string) (challenged, unauthorized float64) {
	return frontDoorCount(protocol, outcomeChallenged), frontDoorCount(protocol, outcomeUnauthorized)
}

// TestDigestResponseAcceptedOnce: a Digest Authorization header captured
// and sent again (same nonce, nonce count and response) is refused with
// 401 stale=true, so a replayer gets nothing while a client that knows the
// password retries with the fresh nonce; the next nonce count of the same
// nonce (qop=auth), and the same request with the fresh nonce, pass. A
// request without credentials and a replay are counted as challenged, a
// wrong password as unauthorized.
func TestDigestResponseAcceptedOnce(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	c := e.dialRTSP()
	uri := c.url("/vod/t1")

	ch0, un0 := counts("rtsp")
	res := c.mustDo(base.Describe, "/vod/t1", nil)
	if res.StatusCode != base.StatusUnauthorized {
		t.Fatalf("no credentials: %d", res.StatusCode)
	}
	if ch, un := counts("rtsp"); ch != ch0+1 || un != un0 {
		t.Fatalf("no credentials counted challenged +%v, unauthorized +%v; want +1, +0", ch-ch0, un-un0)
	}
	nonce := nonceOf(t, res)

	for _, nc := range []string{"00000001", ""} { // qop=auth, then without qop
		first := digestHeaderNC("demo", "demo", "vodcluster", nonce, "DESCRIBE", uri, nc)
		if res := c.mustDo(base.Describe, "/vod/t1", first); res.StatusCode != base.StatusFound {
			t.Fatalf("nc %q: first use %d", nc, res.StatusCode)
		}
		ch0, un0 = counts("rtsp")
		res = c.mustDo(base.Describe, "/vod/t1", first)
		if res.StatusCode != base.StatusUnauthorized || !strings.Contains(res.Header["WWW-Authenticate"][0], "stale=true") {
			t.Fatalf("nc %q: the same header again: %d %v, want 401 stale=true", nc, res.StatusCode, res.Header["WWW-Authenticate"])
		}
		if ch, un := counts("rtsp"); ch != ch0+1 || un != un0 {
			t.Fatalf("replay counted challenged +%v, unauthorized +%v; want +1, +0", ch-ch0, un-un0)
		}
		fresh := nonceOf(t, res)
		if res := c.mustDo(base.Describe, "/vod/t1", digestHeaderNC("demo", "demo", "vodcluster", fresh, "DESCRIBE", uri, nc)); res.StatusCode != base.StatusFound {
			t.Fatalf("nc %q: with the fresh nonce: %d", nc, res.StatusCode)
		}
	}
	// qop=auth: the client's next request with the nonce counts nc up.
	if res := c.mustDo(base.Describe, "/vod/t1", digestHeaderNC("demo", "demo", "vodcluster", nonce, "DESCRIBE", uri, "00000002")); res.StatusCode != base.StatusFound {
		t.Fatalf("nc 2: %d", res.StatusCode)
	}
	// A wrong password is unauthorized, not a challenge, and never stale.
	ch0, un0 = counts("rtsp")
	res = c.mustDo(base.Describe, "/vod/t1", digestHeaderNC("demo", "wrong", "vodcluster", nonce, "DESCRIBE", uri, "00000003"))
	if res.StatusCode != base.StatusUnauthorized || strings.Contains(res.Header["WWW-Authenticate"][0], "stale") {
		t.Fatalf("wrong password: %d %v", res.StatusCode, res.Header["WWW-Authenticate"])
	}
	if ch, un := counts("rtsp"); ch != ch0 || un != un0+1 {
		t.Fatalf("wrong password counted challenged +%v, unauthorized +%v; want +0, +1", ch-ch0, un-un0)
	}
	if got := len(e.sessions()); got != 1 { // one connection, one title: one viewer
		t.Fatalf("%d sessions, want 1", got)
	}

	// HTTP: a GET without credentials is a challenge, a wrong password not.
	ch0, un0 = counts("http")
	get := func(user, pass string) int {
		req, err := http.NewRequest("GET", "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		cl := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		r, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if s := get("", ""); s != http.StatusUnauthorized {
		t.Fatalf("HTTP without credentials: %d", s)
	}
	if s := get("demo", "wrong"); s != http.StatusUnauthorized {
		t.Fatalf("HTTP wrong password: %d", s)
	}
	if ch, un := counts("http"); ch != ch0+1 || un != un0+1 {
		t.Fatalf("HTTP counted challenged +%v, unauthorized +%v; want +1, +1", ch-ch0, un-un0)
	}
}

// Two boxes of one household whose Digest clients send no qop (gortsplib,
// GStreamer, live555) start the same title in the same second: each
// connection gets a nonce of its own, so their responses differ and both
// are admitted at once (gortsplib gives up on the stale=true 401 a shared
// nonce earned the second box). One connection's challenges within the
// second share a nonce (a wrong password resent is the same header).
func TestDigestNoncePerConnection(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	a, b := e.dialRTSP(), e.dialRTSP()
	na := nonceOf(t, a.mustDo(base.Describe, "/vod/t1", nil))
	nb := nonceOf(t, b.mustDo(base.Describe, "/vod/t1", nil))
	if na == nb {
		t.Fatalf("two connections got the same nonce %s", na)
	}
	if again := nonceOf(t, a.mustDo(base.Describe, "/vod/t1", nil)); again != na && again[:16] == na[:16] {
		t.Fatalf("one connection's challenges in one second: nonces %s, %s", na, again)
	}
	for _, c := range []struct {
		rc    *rtspClient
		nonce string
	}{{a, na}, {b, nb}} {
		h := digestHeader("demo", "demo", "vodcluster", c.nonce, "DESCRIBE", c.rc.url("/vod/t1"), "")
		if res := c.rc.mustDo(base.Describe, "/vod/t1", h); res.StatusCode != base.StatusFound {
			t.Fatalf("no-qop Digest with its connection's nonce: %d, want 302", res.StatusCode)
		}
	}
}
