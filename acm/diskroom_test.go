package acm

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node's room for a fill is the free disk its load reports give (its
// file system's, when below its disk_bytes) plus what it can evict, not
// its disk_bytes alone: n1 (200 MB of disk_bytes, 1 MB free, filling t1:
// nothing to evict) gets the viewers of t1 but none that needs a fill of
// a 1.5 MB title;
// those go to n2, and with n2 drained they are refused, 453 over RTSP and
// 503 over HTTP, saying no node has disk room.
func TestFillNeedsTheFreeDiskTheNodeReports(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", disk: 200e6, diskFree: 1e6,
		titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 500_000, Filling: true, Prefetch: true}}})
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", disk: 200e6, diskFree: 150e6})
	redirectedTo := func(title, node string) {
		t.Helper()
		res := e.describe("demo", "demo", title)
		if res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], node) {
			t.Fatalf("%s: %d %v, want a redirect to %s", title, res.StatusCode, res.Header["Location"], node)
		}
	}
	redirectedTo("t2", "127.0.0.1:7002")
	redirectedTo("t3", "127.0.0.1:7002")

	e.setNode(&pb.SetNodeRequest{NodeId: "n2", Draining: ptr(true)})
	redirectedTo("t1", "127.0.0.1:7001") // held: no fill
	res := e.describe("demo", "demo", "t2")
	if res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, "disk room") || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("RTSP, a fill with only n1 in service: %d %q, Retry-After %v; want 453 saying no node has disk room",
			res.StatusCode, res.StatusMessage, res.Header["Retry-After"])
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t2.ts", nil)
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
	if hres.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "disk room") || hres.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP, a fill with only n1 in service: %s %q, Retry-After %q; want 503 saying no node has disk room",
			hres.Status, body, hres.Header.Get("Retry-After"))
	}
}

// A node that reports its free disk unknown (-1: no disk_bytes and its
// file system not measurable) has the room of its budget, as after its
// registration: its viewers get fills, and no eviction is ordered there
// to make room. The -1 was taken as a measure (less than nothing free),
// and the node got no fill.
func TestFreeDiskUnknownCountsTheBudget(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{disk: 200e6, diskFree: -1,
		titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	id := e.admitOne("t2")
	if s := e.session(id); s == nil || s.NodeId != "n1" {
		t.Fatalf("a fill on the node reporting its free disk unknown: %+v", s)
	}
	if free := e.nodeInfo("n1").DiskFreeBytes; free != -1 {
		t.Fatalf("node's free disk shown %d, want -1 (unknown, as reported)", free)
	}
	e.m.mu.Lock()
	evicting := len(e.m.nodes["n1"].evicting)
	e.m.mu.Unlock()
	if evicting != 0 {
		t.Fatalf("%d evictions ordered on the node whose free disk is unknown, want none", evicting)
	}
}
