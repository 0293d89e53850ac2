package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"vodcluster/proto/grpctls"
	"vodcluster/proto/grpctls/grpctlstest"
)

// TestHTTPSThroughFrontDoor: with http_tls_cert_file on the manager and
// the nodes, the front door speaks HTTPS and redirects to the node's
// https:// URL; a client verifying both certificates against the CA gets
// the title's bytes, and ffmpeg, verifying too, plays progressive MPEG-TS
// and HLS over HTTPS. Plain HTTP to the front door gets nothing.
func TestHTTPSThroughFrontDoor(t *testing.T) {
	dir := t.TempDir()
	f, err := grpctlstest.Write(dir, "https-", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := grpctls.ServerConfig(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) { o.HTTPTLS = cfg })
	front := c.manager.HTTPAddr()

	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	var hops []string
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}},
		CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			hops = append(hops, r.URL.Scheme+"://"+r.URL.Host)
			return nil
		},
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+front+"/vod/sample-005.ts", nil)
	req.SetBasicAuth("demo", "demo")
	req.Header.Set("Range", "bytes=0-375")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || len(body) != 376 || body[0] != 0x47 || body[188] != 0x47 {
		t.Fatalf("ranged GET over HTTPS: %s, %d bytes", res.Status, len(body))
	}
	if want := "https://" + c.nodes[0].HTTPAddr(); len(hops) != 1 || hops[0] != want {
		t.Fatalf("redirected to %v, want %s", hops, want)
	}
	if r, err := http.Get("http://" + front + "/vod/sample-005.ts"); err == nil && r.StatusCode < 400 {
		t.Fatalf("plain HTTP to the HTTPS front door answered %s", r.Status)
	}

	if p := ffmpegRun(t, 3, "-ca_file", f.CA, "-tls_verify", "1", "-i", fmt.Sprintf("https://demo:demo@%s/vod/sample-006.ts", front)); p.Err != nil || p.Frames < 70 {
		t.Fatalf("ffmpeg over HTTPS (verified): %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
	if p := ffmpegRun(t, 3, "-i", fmt.Sprintf("https://demo:demo@%s/vod/sample-007/index.m3u8", front)); p.Err != nil || p.Frames < 70 ||
		!strings.Contains(p.Out, "https://") {
		t.Fatalf("ffmpeg HLS over HTTPS: %v, %d frames\n%s", p.Err, p.Frames, p.Out)
	}
}
