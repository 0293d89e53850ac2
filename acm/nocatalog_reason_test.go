package acm

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// A title request to a manager whose origin was never reached and whose
// store holds no catalog says why it is refused, as /healthz does: the
// player got a bare HTTP 503 "service unavailable" and RTSP 503 "Service
// Unavailable", the operator nothing to go on (the manager's log said
// "serving the stored catalog", of a store that held none).
func TestTitleRequestWithoutCatalogSaysWhy(t *testing.T) {
	addr := freeAddr(t) // an origin nothing listens on
	m := startBare(t, func(m *Manager) { m.OriginAddr = addr })

	req, err := http.NewRequest(http.MethodGet, "http://"+m.HTTPAddr()+"/vod/t1.ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("demo", "demo")
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "no catalog yet") || res.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP: %d %q (Retry-After %q), want 503 saying no catalog yet, with Retry-After", res.StatusCode, body, res.Header.Get("Retry-After"))
	}

	e := &env{t: t, m: m}
	r := e.describe("demo", "demo", "t1")
	// The reason phrase says why as the HTTP body and /healthz do (it
	// said only "no catalog yet"), on one line.
	if r.StatusCode != base.StatusServiceUnavailable || !strings.Contains(r.StatusMessage, "no catalog yet: the origin has not been reached") ||
		strings.ContainsAny(r.StatusMessage, "\r\n") || len(r.Header["Retry-After"]) == 0 {
		t.Fatalf("RTSP: %d %q %v, want 503 saying no catalog yet, with Retry-After", r.StatusCode, r.StatusMessage, r.Header)
	}
}
