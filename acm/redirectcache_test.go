package acm

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// Only a progressive title's 302 may be reused by its player
// (Cache-Control: max-age=<token_ttl>, private, and Vary: Authorization,
// so that a browser never hands it to a request made with another
// subscriber's credentials); an HLS playlist's is no-store. HLS players
// ask the node's URL for the segments and the reloads, and a browser
// that kept the HLS redirect sent hls.js, asking the front door again
// after its node died (or ended the session), back to that node for the
// token's life: here the front door's next answer goes to n2, which a
// cached redirect never asked for.
func TestOnlyProgressiveRedirectsAreReused(t *testing.T) {
	e := newManager(t, "", nil)
	n1 := e.startNode("n1", nodeOpts{http: "127.0.0.1:2"})
	e.startNode("n2", nodeOpts{http: "127.0.0.1:2"})
	e.setNode(&pb.SetNodeRequest{NodeId: "n2", Draining: ptr(true)})

	res := e.get("GET", "/vod/t1.ts", "demo", "demo")
	want := fmt.Sprintf("max-age=%d, private", int(e.m.TokenTTL/time.Second))
	if res.StatusCode != http.StatusFound || res.Header.Get("Cache-Control") != want || res.Header.Get("Vary") != "Authorization" {
		t.Errorf("progressive: %d %v, want Cache-Control %q, Vary: Authorization", res.StatusCode, res.Header, want)
	}

	res = e.get("GET", "/vod/t2/index.m3u8", "demo", "demo")
	if res.StatusCode != http.StatusFound || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("HLS: %d %v, want Cache-Control: no-store", res.StatusCode, res.Header)
	}
	if node := redirectNode(e, res); node != "n1" {
		t.Fatalf("HLS: sent to %s, want n1", node)
	}
	e.setNode(&pb.SetNodeRequest{NodeId: "n2", Draining: ptr(false)})
	n1.stop() // its heartbeat stream breaks: the node died
	waitFor(t, 5*time.Second, "n1 out of service", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return !e.m.sched.InService(e.m.sched.Node("n1"))
	})
	res = e.get("GET", "/vod/t2/index.m3u8", "demo", "demo")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("HLS again, n1 dead: %d", res.StatusCode)
	}
	if node := redirectNode(e, res); node != "n2" {
		t.Errorf("HLS again, n1 dead: sent to %s, want n2", node)
	}
}

// redirectNode is the node the token of the front door's 302 res names.
func redirectNode(e *env, res *http.Response) string {
	e.t.Helper()
	u, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	tok, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/s/"), "/")
	c, err := e.signer.Parse(tok)
	if err != nil {
		e.t.Fatalf("token of %q: %v", u, err)
	}
	return c.Node
}
