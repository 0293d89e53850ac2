package acm

import (
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// A viewer of a title no node holds, refused at the queue deadline while
// every origin channel is taken by fills, is told so: RTSP 453 "Not
// Enough Bandwidth (no node that may serve you holds the title yet and
// every origin channel is busy)" and HTTP 503 saying the same, each with
// Retry-After. They
// said "not enough bandwidth" alone, on nodes with all their egress free.
func TestOriginChannelsBusyRefusalSaysSo(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginChannels = 1
		m.QueueDeadline = 300 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:2"})
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

// With site_only, a title held only by a node of another site, refused
// while every origin channel is busy, is not said to be "on no node": it
// is on none that may serve the viewer (the reason phrase said "the
// title is on no node yet" while south-1 held it).
func TestOriginChannelsBusySiteOnlySaysNoNodeOfTheViewers(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.Sites = []Site{{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
		m.SiteOnly = true
		m.OriginChannels = 1
		m.QueueDeadline = 300 * time.Millisecond
	})
	e.startNode("north-1", nodeOpts{rtsp: "127.0.0.1:7001", site: "north"})
	e.startNode("south-1", nodeOpts{rtsp: "127.0.0.1:7002", site: "south", titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusFound {
		t.Fatalf("a cold title: %d", res.StatusCode)
	}
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, "every origin channel is busy") || strings.Contains(res.StatusMessage, "on no node") {
		t.Errorf("a title only south-1 holds: %d %q", res.StatusCode, res.StatusMessage)
	}
}

// A viewer of a title whose only copy is a prefetch that gave its origin
// channel away, while every channel is taken by a viewer's fill, waits
// and is refused 453 (sent to the prefetch, it would play its bytes and
// stall), and the refusal logged says the title is held only as a
// prefetch waiting for a channel: it said that no node holds the title.
func TestOriginChannelsBusyWithOnlyAWaitingPrefetchSaysSo(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.OriginChannels = 1
		m.QueueDeadline = 300 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{http: "127.0.0.1:2", titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 300_000, Filling: true, Prefetch: true, Preemptible: true, OriginWait: true},
	}})
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusFound {
		t.Fatalf("a cold title with only a prefetch on the channel: %d", res.StatusCode)
	}
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("the prefetch's title with the channel taken by t2's fill: %d %q, want 453", res.StatusCode, res.StatusMessage)
	}
	e.m.mu.Lock()
	why := e.m.refusalLocked(store.Title{ID: "t1", BitrateBps: titleBps, SizeBytes: 1_500_000})
	e.m.mu.Unlock()
	if !strings.Contains(why, "only as prefetches waiting for an origin channel") {
		t.Errorf("the refusal logged as %q", why)
	}
}
