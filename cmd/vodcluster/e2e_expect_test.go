package main

import (
	"io/fs"
	"net/url"
	"slices"
	"testing"
	"time"

	"vodcluster/cdp/samples"
	"vodcluster/proto/token"
	v1 "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// A viewer the front door has just sent to a node, who has not reached it
// yet, finds its title there: a fill of another title that needs room,
// which would evict that title (the least recently used), evicts another
// one, and the viewer then plays from the node's disk with no fill from
// the origin. The manager tells the node of the viewer on its way
// (ExpectCommand) when it places it; the fill here comes from a token
// the manager did not issue, as from a manager whose view of the node's
// disk is stale, so that the node's own eviction is what decides.
func TestViewerOnItsWayKeepsItsTitle(t *testing.T) {
	const a, c4, b = "sample-001", "sample-004", "sample-007" // one clip: one size
	st, err := fs.Stat(samples.FS(), "clip-a.ts")
	if err != nil {
		t.Fatal(err)
	}
	c := startTestCluster(t, 1, 100_000_000, func(o *clusterOptions) {
		o.NodeDisk = 2*st.Size() + 1<<20 // two of the titles, not three
		o.StoragePlanner = smm.PlannerNone
	})
	adm := c.admin(t)
	node := c.nodes[0]
	// a, then c4, stored: a is the least recently used.
	for _, id := range []string{a, c4} {
		if _, err := adm.Prefetch(t.Context(), &v1.PlacementRequest{TitleId: id, NodeId: node.ID}); err != nil {
			t.Fatalf("prefetch %s: %v", id, err)
		}
		eventually(t, 30*time.Second, id+" stored on the node", func() bool { return slices.Contains(c.holders(id), node.ID) })
	}

	// A viewer of a is admitted and redirected; it does not connect yet.
	loc := redirect(t, c, a)
	eventually(t, 10*time.Second, "the node told of the viewer on its way", func() bool { return node.ExpectedViewers(a) == 1 })

	// A fill of b on the node needs the room of one title.
	signer, err := token.NewSigner(c.secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := signer.Sign(token.Claims{Session: "stale-view-b", Title: b, Node: node.ID, Proto: "http"}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	bu, err := url.Parse("http://" + node.HTTPAddr() + "/s/" + tok + "/vod/" + b + ".ts")
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeGet(t, bu, "", 188*500); len(got) != 188*500 {
		t.Fatalf("%s from the node: %d bytes, want %d", b, len(got), 188*500)
	}
	eventually(t, 30*time.Second, b+" stored on the node", func() bool { return slices.Contains(c.holders(b), node.ID) })
	held := map[string]bool{}
	for _, s := range node.Titles() {
		held[s.ID] = true
	}
	if !held[a] || held[c4] || !held[b] {
		t.Fatalf("node holds %v: want %s kept for the viewer on its way, %s evicted for %s", held, a, c4, b)
	}

	// The viewer arrives and plays a from the node's disk.
	if p := runFFmpeg(t, loc, "tcp", 2); p.Err != nil || p.Frames < 40 {
		t.Fatalf("the viewer of %s: %d frames, %v\n%s", a, p.Frames, p.Err, p.Out)
	}
	if n := node.Stats().FillsStarted[a]; n != 1 {
		t.Fatalf("%d fills of %s on the node, want 1 (its prefetch): the viewer's play needed the origin", n, a)
	}
	if n := node.ExpectedViewers(a); n != 0 {
		t.Fatalf("%d viewers of %s still expected after the viewer played", n, a)
	}
}
