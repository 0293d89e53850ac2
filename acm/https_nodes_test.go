package acm

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"vodcluster/proto/grpctls/grpctlstest"
	"vodcluster/proto/logtest"
)

// Behind an HTTPS front door, HTTP viewers go only to nodes whose HTTP
// speaks HTTPS, whatever holds the title or is idle: a browser on an
// https:// page refuses a redirect to http://, and the token in the URL
// would travel in clear. RTSP viewers still go to every node. With no
// node with HTTPS in service an HTTP viewer is refused (503), and the log
// says why.
func TestHTTPSFrontDoorSendsHTTPViewersToHTTPSNodes(t *testing.T) {
	_, server, client := grpctlstest.TLS(t, "127.0.0.1")
	var logs logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.HTTPTLS = server
		m.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	e.startNode("plain", nodeOpts{rtsp: "127.0.0.1:7001", http: "127.0.0.1:7081", egress: 100 * titleBps})
	if !strings.Contains(logs.String(), "HTTP viewers are not sent to it") {
		t.Errorf("no warning about the plain-HTTP node at registration:\n%s", logs.String())
	}
	c := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: client},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+e.m.HTTPAddr()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("demo", "demo")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}

	if res := get("/vod/t1.ts"); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HTTPS viewer with only a plain-HTTP node: %s, want 503", res.Status)
	}
	if !strings.Contains(logs.String(), "no node in service has HTTPS") {
		t.Errorf("the refusal's reason is not logged:\n%s", logs.String())
	}
	if loc := e.describe("demo", "demo", "t1").Header["Location"]; len(loc) != 1 || !strings.HasPrefix(loc[0], "rtsp://127.0.0.1:7001/") {
		t.Fatalf("an RTSP viewer is not sent to the plain-HTTP node: %v", loc)
	}

	e.startNode("tls", nodeOpts{rtsp: "127.0.0.1:7002", http: "127.0.0.1:7082", httpTLS: true, egress: 100 * titleBps})
	for i, path := range []string{"/vod/t1.ts", "/vod/t2/index.m3u8", "/vod/t3.ts"} {
		res := get(path)
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusFound || !strings.HasPrefix(loc, "https://127.0.0.1:7082/s/") {
			t.Fatalf("HTTPS viewer %d: %s to %q, want a redirect to the node with HTTPS", i, res.Status, loc)
		}
	}
	if r := e.reserved("plain"); r != titleBps { // the RTSP viewer's alone
		t.Errorf("plain node reserved %d bit/s, want the RTSP viewer's %d", r, titleBps)
	}
}

// Without an HTTPS front door an HTTP viewer still goes to a node with an
// HTTP address, never to one without (it would be admitted and undone).
func TestHTTPViewerOnlyToNodesWithHTTP(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("rtsp-only", nodeOpts{rtsp: "127.0.0.1:7001", noHTTP: true, egress: 100 * titleBps})
	e.startNode("both", nodeOpts{rtsp: "127.0.0.1:7002", http: "127.0.0.1:7082", egress: 100 * titleBps})
	for i, path := range []string{"/vod/t1.ts", "/vod/t2/index.m3u8", "/vod/t3.ts"} {
		res := e.get("GET", path, "demo", "demo")
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusFound || !strings.HasPrefix(loc, "http://127.0.0.1:7082/s/") {
			t.Fatalf("HTTP viewer %d: %d to %q", i, res.StatusCode, loc)
		}
	}
}
