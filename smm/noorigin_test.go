package smm

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// A node without an origin (NodeView.NoOrigin) gets no prefetch: not from
// the plan of hot titles however idle and large it is, not for a pin to
// it, not for an operator's prefetch queued there, and ChooseNode never
// picks it; a title it holds counts as a replica there.
func TestNoPrefetchOnANodeWithoutOrigin(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(3, 6)
	bare := c.node("n0")
	bare.NoOrigin, bare.DiskBytes = true, 1<<40 // the emptiest disk by far
	bare.Items = []Item{{Title: "t05", Bytes: 1 << 30}}
	for i := range 6 {
		seed(t, r, fmt.Sprintf("t%02d", i), 3, offPeak) // 12 Gbit/s each: replicas wanted
	}
	if _, err := r.Pins().Pin("n0", "t04"); err != nil {
		t.Fatal(err)
	}
	r.Queued("n0", "t03", 1<<30, offPeak)
	now := offPeak
	for range 5 {
		acts := r.Plan(now, &c.view)
		for _, a := range acts {
			if a.Node == "n0" {
				t.Fatalf("action on the node without an origin: %v (all %v)", a, acts)
			}
		}
		c.apply(t, acts)
		now = now.Add(time.Minute)
	}
	if h := c.holders("t00"); len(h) < 2 {
		t.Fatalf("t00 on %v: the nodes with an origin should carry its replicas", h)
	}
	if nodes, _ := r.PlannedNodes("t05"); !slices.Contains(nodes, "n0") {
		t.Errorf("t05, held by n0, planned on %v: its copy there is a replica", nodes)
	}
	for _, title := range []string{"t00", "t05"} {
		id, err := r.ChooseNode(title, &c.view, now)
		if id == "n0" {
			t.Errorf("ChooseNode(%s) = n0, a node without an origin", title)
		}
		if err != nil && !errors.Is(err, ErrNoRoom) {
			t.Errorf("ChooseNode(%s): %v", title, err)
		}
	}
	// Only the bare node alive: nothing to choose.
	for i := range c.view.Nodes {
		c.view.Nodes[i].Alive = c.view.Nodes[i].ID == "n0"
	}
	if id, err := r.ChooseNode("t01", &c.view, now); !errors.Is(err, ErrNoRoom) {
		t.Errorf("ChooseNode with only the bare node alive: %q %v, want ErrNoRoom", id, err)
	}
}

// A node without an origin (NodeView.NoOrigin) does not count in the mean
// egress that sizes replica counts: 12 Gbit/s of demand needs two of the
// 10 Gbit/s nodes with an origin (7 Gbit/s each at 70%), however large the
// bare node is (with its 100 Gbit/s counted the mean would be 32.5 Gbit/s
// and one replica would do); the same within a site.
func TestNoOriginNodeDoesNotShrinkReplicaCounts(t *testing.T) {
	for _, site := range []string{"", "east"} {
		t.Run("site="+site, func(t *testing.T) {
			r := newRep(t, ReplicatorConfig{})
			c := newCluster(4, 1)
			for i := range c.view.Nodes {
				c.view.Nodes[i].Site = site
			}
			bare := c.node("n3")
			bare.NoOrigin, bare.EgressBps = true, 100e9
			seed(t, r, "t00", 3, offPeak) // 12 Gbit/s
			if site != "" {
				for range 10 {
					r.ObserveSite("t00", site, offPeak)
				}
			}
			now := offPeak
			for range 3 {
				c.apply(t, r.Plan(now, &c.view))
				now = now.Add(time.Minute)
			}
			nodes, k := r.PlannedNodes("t00")
			if k != 2 {
				t.Fatalf("t00: %d replicas planned on %v, want 2 (the bare node's egress counted?)", k, nodes)
			}
			if h := c.holders("t00"); len(h) != 2 || slices.Contains(h, "n3") {
				t.Fatalf("t00 held by %v, want two nodes with an origin", h)
			}
		})
	}
}
