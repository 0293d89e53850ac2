package acm

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// from is an HTTP client (no redirects followed) whose connections leave
// from the loopback address ip.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// TestPlanPrefetchesAtTheViewersSite: viewers at site north (clients
// 127.0.0.1) ask the front door for t1, viewers at south (127.0.0.2) for
// t2. No node can take them (every node is drained: every request is
// refused 503), but each request counts for its viewer's site with the
// storage planner. The nodes are then put back in service. The plan prefetches t1 on
// one of north's nodes and t2 on one of south's, and nothing at the other
// site; the nodes receive those orders.
func TestPlanPrefetchesAtTheViewersSite(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.Sites = []Site{
			{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
			{Name: "south", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}},
		}
		m.QueueDeadline = 1
		m.PlanInterval, m.ShiftCheck = time.Hour, time.Hour
		m.Replicator.OffPeak = smm.Window{Start: 0, End: 24 * time.Hour}
		m.Replicator.MinExpected = 0.1 // two requests are enough to prefetch
	})
	nodes := map[string]*fakeNode{}
	for _, id := range []string{"north-1", "north-2", "south-1", "south-2"} {
		nodes[id] = e.startNode(id, nodeOpts{site: strings.Split(id, "-")[0]})
		if _, err := e.admin.SetNode(context.Background(), &pb.SetNodeRequest{NodeId: id, Draining: ptr(true)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct{ ip, user, title string }{{"127.0.0.1", "demo", "t1"}, {"127.0.0.2", "kid", "t2"}} {
		c := from(r.ip)
		for range 2 {
			req, err := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/"+r.title+".ts", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.SetBasicAuth(r.user, r.user)
			res, err := c.Do(req)
			if err != nil {
				t.Fatalf("from %s: %v", r.ip, err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("from %s, %s: %d, want 503 (no node can take it)", r.ip, r.title, res.StatusCode)
			}
		}
	}
	// Back in service together: the plan each undrain kicks waits for
	// planMu, so that none sees one node alone in service.
	e.m.planMu.Lock()
	for id := range nodes {
		if _, err := e.admin.SetNode(context.Background(), &pb.SetNodeRequest{NodeId: id, Draining: ptr(false)}); err != nil {
			e.m.planMu.Unlock()
			t.Fatal(err)
		}
	}
	e.m.planMu.Unlock()
	e.m.mu.Lock()
	north, south := e.m.rep.Popularity().SiteShare("t1", "north"), e.m.rep.Popularity().SiteShare("t2", "south")
	e.m.mu.Unlock()
	if north != 1 || south != 1 {
		t.Fatalf("sites' shares: t1 at north %v, t2 at south %v; want 1 each", north, south)
	}
	e.m.plan(time.Now())
	// What the plan ordered (the plan kicked by the registrations may
	// have ordered part of it): title -> nodes.
	ordered := map[string][]string{}
	e.m.mu.Lock()
	for id, ns := range e.m.nodes {
		for title := range ns.pending {
			ordered[title] = append(ordered[title], id)
		}
	}
	e.m.mu.Unlock()
	for title, site := range map[string]string{"t1": "north", "t2": "south"} {
		got := ordered[title]
		if len(got) != 1 || !strings.HasPrefix(got[0], site+"-") {
			t.Fatalf("prefetches of %s on %v, want one on a %s node (all: %v)", title, got, site, ordered)
		}
		if c := nodes[got[0]].prefetchCommand(t); c != title {
			t.Fatalf("%s got a prefetch of %s, want %s", got[0], c, title)
		}
	}
	if len(ordered) != 2 {
		t.Fatalf("prefetches %v, want t1 and t2 only", ordered)
	}
	// The placement lists each holder with its site.
	pl, err := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var reps []string
	for _, r := range pl.GetReplicas() {
		reps = append(reps, fmt.Sprintf("%s@%s/%s", r.GetTitleId(), r.GetNodeId(), r.GetSite()))
	}
	slices.Sort(reps)
	want := []string{fmt.Sprintf("t1@%s/north", ordered["t1"][0]), fmt.Sprintf("t2@%s/south", ordered["t2"][0])}
	if !slices.Equal(reps, want) {
		t.Fatalf("placement %v, want %v", reps, want)
	}
}

// prefetchCommand waits (at most waitForMin) for a PrefetchCommand to reach n,
// skipping other commands, and returns its title.
func (n *fakeNode) prefetchCommand(t *testing.T) string {
	t.Helper()
	deadline := time.After(waitForMin)
	for {
		select {
		case c := <-n.cmds:
			if p := c.GetPrefetch(); p != nil {
				return p.GetTitleId()
			}
		case <-deadline:
			t.Fatalf("no prefetch command reached %s within %v", n.id, waitForMin)
			return ""
		}
	}
}
