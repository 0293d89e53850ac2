package acm

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A manager without a catalog (its origin never reached, none stored)
// answers a title request 503 with Retry-After, over HTTP and RTSP, as
// its /healthz says it is not ready: it answered 404, "title not found",
// for every title of the catalog it had not read yet. Once the catalog is
// read, a title outside it is 404 again.
func TestNoCatalogYetIsUnavailable(t *testing.T) {
	addr := freeAddr(t)
	m := startBare(t, func(m *Manager) { m.OriginAddr, m.CatalogRefresh = addr, 100*time.Millisecond })
	get := func(title string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+m.HTTPAddr()+"/vod/"+title+".ts", nil)
		req.SetBasicAuth("demo", "demo")
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get("t1"); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP without a catalog: %d, Retry-After %q; want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	nc, err := net.Dial("tcp", m.RTSPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("DESCRIBE rtsp://" + m.RTSPAddr() + "/vod/t1 RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Basic ZGVtbzpkZW1v\r\n\r\n"))
	r := bufio.NewReader(nc)
	status, _ := r.ReadString('\n')
	retry := false
	for {
		line, err := r.ReadString('\n')
		if err != nil || line == "\r\n" {
			break
		}
		retry = retry || strings.HasPrefix(line, "Retry-After:")
	}
	if !strings.HasPrefix(status, "RTSP/1.0 503 ") || !retry {
		t.Fatalf("RTSP without a catalog: %q (Retry-After %v), want 503 with Retry-After", status, retry)
	}

	startOrigin(t, addr, testTitles)
	awaitProbe(t, m, "/healthz", http.StatusOK, "ok")
	if res := get("no-such-title"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown title with a catalog: %d, want 404", res.StatusCode)
	}
}
