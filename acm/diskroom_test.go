package acm

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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

// A fill booked on a node takes its bytes from the room its reports give
// until the node's own report shows it, however often the node reports
// (every 50 ms here, many reports before the second viewer): with 2 MB
// free, a fill of 1.5 MB booked there for a viewer who has not arrived
// leaves no room for another. Once the node reports the fill in progress
// (its free disk less the bytes still to write, as a node reports it),
// the room is counted once: nothing is left for a third.
func TestBookedFillCountedOnceAcrossReports(t *testing.T) {
	e := newManager(t, "", nil)
	n1 := e.startNode("n1", nodeOpts{disk: 200e6, diskFree: 2e6})
	first := e.admitOne("t2")
	if s := e.session(first); s.NodeId != "n1" {
		t.Fatalf("first fill placed on %q", s.NodeId)
	}
	after := e.reports("n1") + 5
	waitFor(t, 5*time.Second, "five more reports of n1", func() bool { return e.reports("n1") >= after })
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("second fill with 0.5 MB of room left: %d, want 453", res.StatusCode)
	}
	// The viewer arrived: the node fills t2, 0.5 MB written, and reports
	// 2 MB - 0.5 MB written - 1 MB still to write = 0.5 MB free.
	n1.mu.Lock()
	n1.titles = []*pb.StoredTitle{{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 500_000, Filling: true}}
	n1.sessions = []string{first}
	n1.diskFree = 500_000
	n1.mu.Unlock()
	waitFor(t, 5*time.Second, "n1's report of its fill", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return !e.m.nodes["n1"].awaiting["t2"] && e.m.nodes["n1"].titles["t2"] != nil
	})
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("second fill with the first in progress, 0.5 MB free: %d, want 453", res.StatusCode)
	}
	// A third title's viewer with 1.5 MB free once it is reported so.
	n1.mu.Lock()
	n1.diskFree = 1_500_000
	n1.mu.Unlock()
	waitFor(t, 5*time.Second, "n1's report of 1.5 MB free", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"].diskFree == 1_500_000
	})
	if id := e.admitOne("t3"); e.session(id).NodeId != "n1" {
		t.Fatalf("fill with 1.5 MB free placed on %q", e.session(id).NodeId)
	}
}
