package acm

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// A viewer of a title no node holds, refused at the queue deadline while
// every origin channel is taken by fills, is told so: RTSP 453 "Not
// Enough Bandwidth (the title is on no node yet and every origin channel
// is busy)" and HTTP 503 saying the same, each with Retry-After. They
// said "not enough bandwidth" alone, on nodes with all their egress free.
func TestOriginChannelsBusyRefusalSaysSo(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginChannels = 1
		m.QueueDeadline = 300 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:0"})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("first cold title: %d", res.StatusCode)
	}
	res := e.describe("demo", "demo", "t2")
	if res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, "every origin channel is busy") || len(res.Header["Retry-After"]) != 1 {
		t.Errorf("RTSP, second cold title: %d %q %v", res.StatusCode, res.StatusMessage, res.Header)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t3.ts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("demo", "demo")
	hres, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hres.Body)
	hres.Body.Close()
	if hres.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "every origin channel is busy") || hres.Header.Get("Retry-After") == "" {
		t.Errorf("HTTP, third cold title: %d %q %v", hres.StatusCode, body, hres.Header)
	}
}
