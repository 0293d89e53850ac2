package acm

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// An HTTP play URL with a trailing slash, as an RTSP one may end, was
// 404 at the front door: it is moved (301) to the URL without it, its
// query (a subscriber token) kept, and admits nothing until the player
// follows it. curl -L follows it to the node's redirect.
func TestHTTPTrailingSlashMoved(t *testing.T) {
	curl := needTool(t, "curl")
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{http: "127.0.0.1:7080"})
	for path, want := range map[string]string{
		"/vod/t1.ts/":                 "/vod/t1.ts",
		"/vod/t2/index.m3u8/":         "/vod/t2/index.m3u8",
		"/vod/t1.ts/?token=abc&x=1":   "/vod/t1.ts?token=abc&x=1",
		"/vod/t2/index.m3u8/?token=a": "/vod/t2/index.m3u8?token=a",
	} {
		res := e.get("GET", path, "", "")
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != want {
			t.Errorf("GET %s: %d Location %q, want 301 to %q", path, res.StatusCode, res.Header.Get("Location"), want)
		}
	}
	// Not a play URL with a slash added: 404 as before.
	for _, path := range []string{"/vod/t1/", "/vod/t1", "/vod/", "/vod/t2/index.m3u8/x/", "/vod/t2/seg-1.ts/"} {
		if res := e.get("GET", path, "demo", "demo"); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, res.StatusCode)
		}
	}
	if ss := e.sessions(); len(ss) != 0 {
		t.Fatalf("sessions admitted by a 301: %v", ss)
	}
	// curl follows the 301 and stops at the front door's 302 to the node
	// (--max-redirs 1: no node listens there).
	out, err := exec.Command(curl, "-sS", "-L", "--max-redirs", "1", "-u", "demo:demo", "-o", "/dev/null",
		"-w", "%{http_code} %{num_redirects} %{redirect_url}", "http://"+e.m.HTTPAddr()+"/vod/t1.ts/").Output()
	f := strings.Fields(string(out))
	if len(f) != 3 || f[0] != "302" || f[1] != "1" {
		t.Fatalf("curl -L: %q %v, want the node's 302 after one redirect", out, err)
	}
	if c := e.tokenOf(f[2], "http", "127.0.0.1:7080", "t1", ".ts"); c.Node != "n1" || c.User != "demo" {
		t.Fatalf("claims %+v", c)
	}
	if ss := e.sessions(); len(ss) != 1 {
		t.Fatalf("sessions after curl: %v, want the one", ss)
	}
}
