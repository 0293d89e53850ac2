package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
	"vodcluster/vodnode"
)

// frontGet asks the front door for path over HTTP as demo (with the
// Range header rng unless empty) and returns its redirect's Location,
// without following it.
func (c *cluster) frontGet(t *testing.T, path, rng string) *url.URL {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+c.manager.HTTPAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("demo", "demo")
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("front door GET %s: %s, Location %v", path, resp.Status, err)
	}
	return loc
}

// nodeGet GETs loc (a node's URL from the front door), with the Range
// header rng unless empty, and returns the first n bytes of the body (all
// of it when n < 0).
func nodeGet(t *testing.T, loc *url.URL, rng string, n int64) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, loc.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("GET %s: %s", loc, resp.Status)
	}
	var r io.Reader = resp.Body
	if n >= 0 {
		r = io.LimitReader(resp.Body, n)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("GET %s: %v after %d bytes", loc, err, len(b))
	}
	return b
}

// nodeAt returns the index of the node whose HTTP address is host.
func (c *cluster) nodeAt(t *testing.T, host string) int {
	t.Helper()
	for i, n := range c.nodes {
		if n.HTTPAddr() == host {
			return i
		}
	}
	t.Fatalf("no node at %s", host)
	return -1
}

// cutFill leaves a partial of title on node-2 (A): the title's first
// viewer, sent to A while node-1 drains, reads its beginning and leaves;
// A stops once a quarter of the title is filled and starts again, keeping
// the fill's bytes as a partial. It returns A's index, the restarted node
// (registered again with the manager) and the title's bytes: the origin's
// file.
func cutFill(t *testing.T, c *cluster, title, file string) (int, *vodnode.Node, []byte) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(c.opts.DataDir, "cdp", file))
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(want))

	// node-1 drains for the first viewer: A is node-2, which a tie between
	// two idle nodes would not pick (the first node in the scheduler's
	// order wins).
	admin := c.admin(t)
	setDrain := func(id string, v bool) {
		t.Helper()
		if _, err := admin.SetNode(t.Context(), &v1.SetNodeRequest{NodeId: id, Draining: &v}); err != nil {
			t.Fatal(err)
		}
	}
	setDrain(c.nodes[0].ID, true)

	// The first viewer reads the beginning and leaves; the fill goes on.
	loc := c.frontGet(t, "/vod/"+title+".ts", "")
	a := c.nodeAt(t, loc.Host)
	if a != 1 {
		t.Fatalf("first viewer sent to %s, want node-2 (node-1 drains)", loc.Host)
	}
	setDrain(c.nodes[0].ID, false)
	if got := nodeGet(t, loc, "", 100*188); !bytes.Equal(got, want[:len(got)]) || len(got) != 100*188 {
		t.Fatalf("first viewer: %d bytes, not the title's beginning", len(got))
	}
	nodeA := c.nodes[a]
	eventually(t, 20*time.Second, "a quarter of the title filled on A", func() bool {
		for _, s := range nodeA.Titles() {
			if s.ID == title && s.Filling && s.Stored >= size/4 {
				return true
			}
		}
		return false
	})
	// A stops in the middle of the fill: its bytes stay as a partial.
	if err := nodeA.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the origin's transfer to end", func() bool { return c.origin.Stats().Active == 0 })

	restarted := c.newNode(nodeA.ID)
	if err := restarted.Start(); err != nil {
		t.Fatal(err)
	}
	c.nodes[a] = restarted // closed with the cluster
	ps := restarted.Partials()
	if len(ps) != 1 || ps[0].ID != title || ps[0].Stored < size/4 || ps[0].Stored >= size {
		t.Fatalf("partials of the restarted node: %+v, want some of %s's %d bytes", ps, title, size)
	}
	eventually(t, 10*time.Second, "A registered again", func() bool {
		r, err := admin.ListNodes(t.Context(), &v1.ListNodesRequest{})
		if err != nil {
			return false
		}
		for _, n := range r.GetNodes() {
			if n.GetNodeId() == restarted.ID && n.GetAlive() && n.GetRtspAddr() == restarted.RTSPAddr() {
				return true
			}
		}
		return false
	})
	return a, restarted, want
}

// TestPartialFillResumedWhereItWasCut: a fill cut short on node A (the
// node stopped in the middle of it) leaves a partial; A comes back and
// reports it, and the admin API lists it (placement and node); the
// manager sends the title's next viewer to A, though the other node is as
// idle and first in the scheduler's order, and A fetches only the bytes
// missing from the origin. Storage planning is off, so the origin's only
// transfers are the viewers' fills.
func TestPartialFillResumedWhereItWasCut(t *testing.T) {
	const title = "sample-004" // clip-a.ts, 20 s
	c := startTestCluster(t, 2, 100_000_000, func(o *clusterOptions) {
		o.OriginRateBps = 1_000_000 // the title's fill takes about 12 s
		o.StoragePlanner = smm.PlannerNone
	})
	a, restarted, want := cutFill(t, c, title, "clip-a.ts")
	size := int64(len(want))
	sent := c.origin.Stats().BytesSent // the cut fill's
	kept := restarted.Partials()[0].Stored
	admin := c.admin(t)

	// The operator sees the partial and the disk it holds.
	pl, err := admin.ListPlacement(t.Context(), &v1.ListPlacementRequest{TitleId: title})
	if err != nil || len(pl.GetReplicas()) != 0 || len(pl.GetPartials()) != 1 {
		t.Fatalf("placement of %s with a partial on A: %v %v", title, pl, err)
	}
	if p := pl.GetPartials()[0]; p.GetNodeId() != restarted.ID || p.GetStoredBytes() != kept || p.GetSizeBytes() != size || p.GetStale() || p.GetSinceUnixMs() <= 0 {
		t.Fatalf("placement's partial %v, want %s's %d of %d bytes on %s", p, title, kept, size, restarted.ID)
	}
	nodes, err := admin.ListNodes(t.Context(), &v1.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.GetNodes() {
		if n.GetNodeId() == restarted.ID && (n.GetPartials() != 1 || n.GetPartialBytes() != kept || n.GetTitles() != 0) {
			t.Fatalf("A in the node list: %d partials of %d bytes, %d titles; want 1 of %d, 0", n.GetPartials(), n.GetPartialBytes(), n.GetTitles(), kept)
		}
	}

	// The next viewer goes to A, which resumes the fill.
	loc := c.frontGet(t, "/vod/"+title+".ts", "")
	if loc.Host != restarted.HTTPAddr() {
		t.Fatalf("next viewer sent to %s, want A (%s) with its partial of %d bytes", loc.Host, restarted.HTTPAddr(), kept)
	}
	if got := nodeGet(t, loc, "", 100*188); !bytes.Equal(got, want[:len(got)]) || len(got) != 100*188 {
		t.Fatalf("next viewer: %d bytes, not the title's beginning", len(got))
	}
	eventually(t, 30*time.Second, "the resumed fill to complete on A", func() bool {
		h := c.holders(title)
		return len(h) == 1 && h[0] == restarted.ID
	})
	eventually(t, 10*time.Second, "the origin's transfer to end", func() bool { return c.origin.Stats().Active == 0 })
	if got := c.origin.Stats().BytesSent - sent; got != size-kept {
		t.Fatalf("the resumed fill fetched %d bytes from the origin, want the %d missing (%d of %d kept)", got, size-kept, kept, size)
	}
	if n := c.origin.Stats().TitleTransfers[title]; n != 2 {
		t.Fatalf("origin transfers of %s: %d, want 2 (the cut fill and its resumption)", title, n)
	}
	other := c.nodes[1-a]
	if n := other.Stats().FillsStarted[title]; n != 0 {
		t.Fatalf("%s started %d fills of %s, want none", other.ID, n, title)
	}
	// The copy on A is the origin's title, its end included.
	loc = c.frontGet(t, "/vod/"+title+".ts", fmt.Sprintf("bytes=%d-%d", size-1880, size-1))
	if loc.Host != restarted.HTTPAddr() {
		t.Fatalf("viewer of the complete title sent to %s, want its holder A", loc.Host)
	}
	if got := nodeGet(t, loc, fmt.Sprintf("bytes=%d-%d", size-1880, size-1), -1); !bytes.Equal(got, want[size-1880:]) {
		t.Fatalf("the title's last 1880 bytes on A differ from the origin's (%d bytes)", len(got))
	}
}

// TestPartialFillEvictedByTheOperator: the operator's eviction (vodctl
// evict, Admin.Evict) of a title a node keeps only a partial of removes
// the partial's files on that node, through the EvictCommand a copy's
// eviction uses; the manager lists it no more, and evicting it again is
// NOT_FOUND.
func TestPartialFillEvictedByTheOperator(t *testing.T) {
	const title = "sample-004" // clip-a.ts
	c := startTestCluster(t, 2, 100_000_000, func(o *clusterOptions) {
		o.OriginRateBps = 1_000_000
		o.StoragePlanner = smm.PlannerNone
	})
	_, nodeA, _ := cutFill(t, c, title, "clip-a.ts")
	part := filepath.Join(nodeA.DataDir, "titles", title+".ts.part")
	if !fileExists(part) || !fileExists(part+".meta") {
		t.Fatalf("no partial's files on %s before the eviction", nodeA.ID)
	}
	admin := c.admin(t)
	ack, err := admin.Evict(t.Context(), &v1.PlacementRequest{TitleId: title, NodeId: nodeA.ID})
	if err != nil || !contains(ack.GetMessage(), "partial fill") {
		t.Fatalf("evicting the partial: %v %v", ack, err)
	}
	eventually(t, 10*time.Second, "the partial's files removed on A", func() bool {
		return len(nodeA.Partials()) == 0 && !fileExists(part) && !fileExists(part+".meta")
	})
	eventually(t, 10*time.Second, "the placement without the partial", func() bool {
		pl, err := admin.ListPlacement(t.Context(), &v1.ListPlacementRequest{})
		return err == nil && len(pl.GetPartials()) == 0
	})
	if _, err := admin.Evict(t.Context(), &v1.PlacementRequest{TitleId: title, NodeId: nodeA.ID}); status.Code(err) != codes.NotFound {
		t.Fatalf("evicting it again: %v, want NOT_FOUND", err)
	}
}
