package acm

import (
	"net/url"
	"strings"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// A Digest uri must name the request's URL (RFC 7616 section 3.4.6): the
// host and port too, not the path alone. A response computed for
// rtsp://other-host/vod/t1 was accepted for this front door's /vod/t1.
func TestSameResource(t *testing.T) {
	target, err := url.Parse("rtsp://vod.example.net:8554/vod/t1")
	if err != nil {
		t.Fatal(err)
	}
	withQuery, _ := url.Parse("rtsp://vod.example.net:8554/vod/t1?lang=fr")
	defaultPort, _ := url.Parse("rtsp://vod.example.net/vod/t1")
	ipv6, _ := url.Parse("rtsp://[2001:db8::7]:8554/vod/t1")
	for _, c := range []struct {
		uri    string
		target *url.URL
		want   bool
	}{
		{"rtsp://vod.example.net:8554/vod/t1", target, true},  // ffmpeg, GStreamer, VLC: the request's URL
		{"rtsp://VOD.Example.NET:8554/vod/t1", target, true},  // host letter case
		{"RTSP://vod.example.net:8554/vod/t1", target, true},  // scheme letter case
		{"rtsp://vod.example.net:8554/vod/t1/", target, true}, // a trailing slash
		{"/vod/t1", target, true},                             // a path alone (some set-top boxes)
		{"rtsp://vod.example.net:554/vod/t1", defaultPort, true},
		{"rtsp://vod.example.net/vod/t1", defaultPort, true},
		{"rtsp://[2001:db8::7]:8554/vod/t1", ipv6, true},
		{"rtsp://vod.example.net:8554/vod/t1?lang=fr", withQuery, true},
		{"/vod/t1?lang=fr", withQuery, true},

		{"rtsp://evil.example.net:8554/vod/t1", target, false}, // another host
		{"rtsp://vod.example.net:9554/vod/t1", target, false},  // another port
		{"rtsp://vod.example.net/vod/t1", target, false},       // 554, not 8554
		{"rtsps://vod.example.net:8554/vod/t1", target, false}, // another scheme
		{"http://vod.example.net:8554/vod/t1", target, false},
		{"//evil.example.net:8554/vod/t1", target, false}, // a host without a scheme
		{"rtsp://vod.example.net:8554/vod/t2", target, false},
		{"/vod/t2", target, false},
		{"rtsp://vod.example.net:8554/vod/t1?lang=de", withQuery, false},
		{"rtsp://vod.example.net:8554/vod/t1", withQuery, false},
		{"rtsp://vod.example.net:8554/vod/t1?lang=fr", target, false},
		{"rtsp://[2001:db8::8]:8554/vod/t1", ipv6, false},
		{"%zz", target, false},
	} {
		if got := sameResource(c.uri, c.target); got != c.want {
			t.Errorf("uri %q for %s: %v, want %v", c.uri, c.target, got, c.want)
		}
	}
}

// Over RTSP, a Digest answer whose uri names another host is refused with
// 401 (a plain refusal, not stale), and the same answer computed for this
// front door's URL is accepted.
func TestRTSPDigestURIOfAnotherHost(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	c := e.dialRTSP()
	nonce := nonceOf(t, c.mustDo(base.Describe, "/vod/t1", nil))
	forged := strings.Replace(c.url("/vod/t1"), "127.0.0.1", "evil.example.net", 1)
	for _, qop := range []string{"", "auth"} {
		res := c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "demo", "vodcluster", nonce, "DESCRIBE", forged, qop))
		if res.StatusCode != base.StatusUnauthorized || strings.Contains(res.Header["WWW-Authenticate"][0], "stale") {
			t.Fatalf("uri %s, qop=%q: %d %v, want 401 without stale", forged, qop, res.StatusCode, res.Header["WWW-Authenticate"])
		}
	}
	if got := len(e.sessions()); got != 0 {
		t.Fatalf("%d sessions admitted for a forged uri", got)
	}
	// A player sending the path alone, and one sending the full URL.
	for _, uri := range []string{"/vod/t1", c.url("/vod/t1")} {
		nonce := nonceOf(t, c.mustDo(base.Describe, "/vod/t1", nil))
		if res := c.mustDo(base.Describe, "/vod/t1", digestHeader("demo", "demo", "vodcluster", nonce, "DESCRIBE", uri, "auth")); res.StatusCode != base.StatusFound {
			t.Fatalf("uri %s: %d, want 302", uri, res.StatusCode)
		}
	}
}
