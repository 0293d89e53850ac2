package smm

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// egressCluster is newCluster's two titles (t00 at 4 Mbit/s, t01 at 1
// Mbit/s) on nodes of the given egress, bit/s, named n0, n1, ...
func egressCluster(egress ...int64) *cluster {
	c := newCluster(len(egress), 2)
	for i, e := range egress {
		c.view.Nodes[i].EgressBps = e
	}
	t01 := c.view.Titles["t01"]
	t01.Bitrate = 1e6
	c.view.Titles["t01"] = t01
	return c
}

// planRounds runs n Plans a minute apart from now, each carried out at
// once, and returns every Prefetch ordered.
func planRounds(t *testing.T, r *Replicator, c *cluster, now time.Time, n int) []Action {
	t.Helper()
	var pf []Action
	for i := range n {
		acts := r.Plan(now.Add(time.Duration(i)*time.Minute), &c.view)
		for _, a := range acts {
			if a.Kind == Prefetch {
				pf = append(pf, a)
			}
		}
		c.apply(t, acts)
	}
	return pf
}

// TestPlanNoReplicaOnNodeTooSmall: in a cluster of a node whose egress
// (3 Mbit/s) is less than t00's bitrate (4 Mbit/s) and a large one, t00,
// hot enough for two replicas over the two nodes' mean egress, gets one,
// on the large node only, and no prefetch on the small one; t01 (1
// Mbit/s), as hot, gets both nodes. ChooseNode then has no node for t00
// (the large one holds it) and does not offer the small one.
func TestPlanNoReplicaOnNodeTooSmall(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := egressCluster(3e6, 10e9) // n0 small, n1 large
	now := offPeak
	seed(t, r, "t00", 2, now) // 8 Gbit/s: > 0.7 * mean(3e6, 10e9)
	seed(t, r, "t01", 8, now) // 8 Gbit/s too
	pf := planRounds(t, r, c, now, 3)
	for _, a := range pf {
		if a.Node == "n0" && a.Title == "t00" {
			t.Fatalf("prefetch of t00 (4 Mbit/s) ordered on n0 (egress 3 Mbit/s): %v", pf)
		}
	}
	if nodes, k := r.PlannedNodes("t00"); !slices.Equal(nodes, []string{"n1"}) || k != 1 {
		t.Fatalf("t00 planned on %v with %d replicas, want [n1] and 1 (only n1 can stream it)", nodes, k)
	}
	if h := c.holders("t00"); !slices.Equal(h, []string{"n1"}) {
		t.Fatalf("t00 held by %v, want [n1]", h)
	}
	if nodes, _ := r.PlannedNodes("t01"); len(nodes) != 2 {
		t.Fatalf("t01 (1 Mbit/s) planned on %v, want both nodes", nodes)
	}
	for _, f := range r.Fills() {
		if f.Node == "n0" && f.Title == "t00" {
			t.Fatalf("fill of t00 on n0 listed: %+v", f)
		}
	}
	if id, err := r.ChooseNode("t00", &c.view, now.Add(time.Hour)); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("ChooseNode(t00) = %q, %v; want ErrNoRoom (n1 holds it, n0 cannot stream it)", id, err)
	}
}

// TestPlanNoNodeCanStream: with only nodes too small for t00, even pinned
// (to the cluster and to n0) and hot, t00 gets no replica, no prefetch
// and no fill listed, and ChooseNode finds no node for it; t01 is planned
// as usual.
func TestPlanNoNodeCanStream(t *testing.T) {
	pins := &Pins{}
	if _, err := pins.Pin("", "t00"); err != nil {
		t.Fatal(err)
	}
	if _, err := pins.Pin("n0", "t00"); err != nil {
		t.Fatal(err)
	}
	r, err := NewReplicator(ReplicatorConfig{}, pins)
	if err != nil {
		t.Fatal(err)
	}
	c := egressCluster(3e6, 3e6)
	now := offPeak
	seed(t, r, "t00", 2, now)
	seed(t, r, "t01", 1, now)
	for _, a := range planRounds(t, r, c, now, 3) {
		if a.Title == "t00" {
			t.Fatalf("prefetch of t00 (4 Mbit/s) ordered on %s (egress 3 Mbit/s)", a.Node)
		}
	}
	if nodes, k := r.PlannedNodes("t00"); len(nodes) != 0 || k != 0 {
		t.Fatalf("t00 planned on %v with %d replicas, want none", nodes, k)
	}
	for _, f := range r.Fills() {
		if f.Title == "t00" {
			t.Fatalf("fill of t00 listed: %+v", f)
		}
	}
	if len(c.holders("t01")) == 0 {
		t.Fatal("t01 (1 Mbit/s) not prefetched")
	}
	if id, err := r.ChooseNode("t00", &c.view, now.Add(time.Hour)); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("ChooseNode(t00) = %q, %v; want ErrNoRoom", id, err)
	}
}

// TestSitesNoReplicaOnNodeTooSmall: site A's viewers make all of t00's
// demand but A's only node is too small for it: A gets no replica of it
// (its quota is over the nodes that can stream it) and t00 is placed on
// site B's large node.
func TestSitesNoReplicaOnNodeTooSmall(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(2, []string{"A", "B"}, []int{1, 1})
	c.node("A0").EgressBps = 3e6
	now := offPeak
	seedSites(t, r, "t00", 0.5, map[string]float64{"A": 1}, now)
	for _, a := range planRounds(t, r, c, now, 3) {
		if a.Node == "A0" && a.Title == "t00" {
			t.Fatal("prefetch of t00 (4 Mbit/s) ordered on A0 (egress 3 Mbit/s)")
		}
	}
	if nodes, _ := r.PlannedNodes("t00"); !slices.Equal(nodes, []string{"B0"}) {
		t.Fatalf("t00 planned on %v, want [B0]", nodes)
	}
	if got := r.SiteReplicas("t00")["A"]; got != 0 {
		t.Fatalf("site A given %d replicas of t00, want 0", got)
	}
}

// TestOperatorPrefetchNodeTooSmallDropped: the operator's prefetch on a
// node that has since registered again with an egress less than the
// title's bitrate is dropped (DropTooSmall) at the next plan, not
// ordered: one still queued, and one that failed and awaits its retry
// (that one stayed in `vodctl fills` as a retry that would never come, up
// to RetryMax, 30 min, after the failure).
func TestOperatorPrefetchNodeTooSmallDropped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order func(r *Replicator, now time.Time)
	}{
		{"queued", func(r *Replicator, now time.Time) { r.Queued("n0", "t00", 1<<30, now) }},
		{"failed", func(r *Replicator, now time.Time) {
			r.Prefetched("n0", "t00", 1<<30, now)
			r.FillFailed("n0", "t00", now)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRep(t, ReplicatorConfig{})
			c := egressCluster(10e9)
			now := offPeak
			tc.order(r, now)
			c.node("n0").EgressBps = 3e6
			if acts := r.Plan(now.Add(time.Second), &c.view); len(acts) != 0 {
				t.Fatalf("orders %v, want none", acts)
			}
			d := r.DroppedPrefetches()
			if len(d) != 1 || d[0].Node != "n0" || d[0].Title != "t00" || d[0].Why != DropTooSmall {
				t.Fatalf("dropped %+v, want n0/t00 with DropTooSmall", d)
			}
			if f := r.Fills(); len(f) != 0 {
				t.Fatalf("fills %+v, want none", f)
			}
		})
	}
}

// TestSiteCopyOnNodeTooSmallIsNoCopy: site A's viewers make all of t00's
// demand; A's copy is on A0, whose egress (3 Mbit/s) has since fallen
// below t00's bitrate (4 Mbit/s: it registered again with less), and B0
// holds another. The plan places A's replica on A1, and at the peak its
// prefetch is ordered as that of a site with no copy (A's viewers are
// served across sites or from the origin meanwhile): the copy on A0 is no
// copy of A's, as it is none of the cluster's. A0's copy was counted as
// A's, so the prefetch waited for the off-peak.
func TestSiteCopyOnNodeTooSmallIsNoCopy(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(1, []string{"A", "B"}, []int{2, 1})
	c.node("A0").EgressBps = 3e6
	for _, id := range []string{"A0", "B0"} {
		c.node(id).Items = []Item{{Title: "t00", Bytes: 1 << 30}}
	}
	seedSites(t, r, "t00", 0.5, map[string]float64{"A": 1}, peak) // 2 Gbit/s: one replica
	acts := r.Plan(peak, &c.view)
	if nodes, _ := r.PlannedNodes("t00"); !slices.Equal(nodes, []string{"A1"}) {
		t.Fatalf("t00 planned on %v, want [A1]", nodes)
	}
	if !slices.Contains(acts, Action{Kind: Prefetch, Node: "A1", Title: "t00"}) {
		t.Fatalf("orders %v, want a prefetch of t00 on A1 (site A has no copy that can stream it)", acts)
	}
}

// TestCopyOnNodeTooSmallIsNoSpare: n1 holds t00 and t01, both planned
// there, t00 a little more requested; n0, whose egress (3 Mbit/s) has
// since fallen below their bitrate (4 Mbit/s), holds t00 too. A fill on
// demand on n1 that needs one of them evicts t01: the copy of t00 on n0
// plays to no viewer, so it is no spare of n1's (Copies 0). It counted as
// one, halving t00's gdsf priority, and n1's t00, the only copy any
// viewer could play, went first.
func TestCopyOnNodeTooSmallIsNoSpare(t *testing.T) {
	st, err := NewStorage("gdsf", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Replicator
	c := egressCluster(3e6, 10e9)
	c.view.Titles["t01"] = TitleInfo{ID: "t01", Bytes: 1 << 30, Bitrate: 4e6, Duration: 2000}
	c.node("n0").Items = []Item{{Title: "t00", Bytes: 1 << 30}}
	c.node("n1").Items = []Item{{Title: "t00", Bytes: 1 << 30}, {Title: "t01", Bytes: 1 << 30}}
	seed(t, r, "t00", 0.012, offPeak)
	seed(t, r, "t01", 0.01, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	for _, title := range []string{"t00", "t01"} {
		if nodes, _ := r.PlannedNodes(title); !slices.Equal(nodes, []string{"n1"}) {
			t.Fatalf("%s planned on %v, want [n1]", title, nodes)
		}
	}
	if n := r.Copies("n1", "t00"); n != 0 {
		t.Fatalf("Copies(n1, t00) = %d, want 0 (n0 cannot stream it)", n)
	}
	v, ok := st.Evictor("n1").Victims(c.node("n1").Items, 1<<30, offPeak)
	if !ok || !slices.Equal(v, []string{"t01"}) {
		t.Fatalf("victims %v, %v; want [t01]", v, ok)
	}
}

// TestSiteCopyOnNodeTooSmallNotKept: A0 (3 Mbit/s, its disk full with
// t00 at 4 Mbit/s: its egress has since fallen below that) is to hold
// t01 (1 Mbit/s, site A's viewers); the plan places t00 at site A on A1,
// which has no fill slot yet. A0's t00 is evicted for t01's prefetch: a
// copy no viewer could play there is not the site's only copy kept for
// A1's fill. It was kept, so t01 was never prefetched on A0.
func TestSiteCopyOnNodeTooSmallNotKept(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(2, []string{"A"}, []int{2})
	c.view.Titles["t01"] = TitleInfo{ID: "t01", Bytes: 1 << 29, Bitrate: 1e6, Duration: 2000}
	a0, a1 := c.node("A0"), c.node("A1")
	a0.EgressBps, a0.DiskBytes = 3e6, 5<<28 // 1.25 GiB
	a0.Items = []Item{{Title: "t00", Bytes: 1 << 30}}
	a1.DiskBytes, a1.Fills = 5<<28, r.Config().MaxFillsPerNode
	seedSites(t, r, "t00", 0.1, map[string]float64{"A": 1}, offPeak)
	seedSites(t, r, "t01", 0.01, map[string]float64{"A": 1}, offPeak)
	acts := r.Plan(offPeak, &c.view)
	if nodes, _ := r.PlannedNodes("t00"); !slices.Equal(nodes, []string{"A1"}) {
		t.Fatalf("t00 planned on %v, want [A1]", nodes)
	}
	if nodes, _ := r.PlannedNodes("t01"); !slices.Equal(nodes, []string{"A0"}) {
		t.Fatalf("t01 planned on %v, want [A0]", nodes)
	}
	want := []Action{{Kind: Evict, Node: "A0", Title: "t00"}, {Kind: Prefetch, Node: "A0", Title: "t01"}}
	if !slices.Equal(acts, want) {
		t.Fatalf("orders %v, want %v", acts, want)
	}
}

// TestPeakPrefetchOverNodesThatCanStream: n0 (3 Mbit/s) cannot stream
// t00 (4 Mbit/s), n1 and n2 (10 Gbit/s) can; the evening's peak (8 Gbit/s)
// gave t00 two replicas, on n1, which holds it, and n2. At the peak its
// demand is 5.6 Gbit/s, which n1's copy carries (0.8 of what a node that
// can stream it carries at the target utilization): n2's prefetch waits
// for the off-peak, as in a cluster without n0. The urgency took the mean
// egress of every node, n0's included (1.2 of it), and ordered it at the
// peak. The same with the three nodes at site A, whose viewers make all
// the demand (the site's mean egress).
func TestPeakPrefetchOverNodesThatCanStream(t *testing.T) {
	for _, sited := range []bool{false, true} {
		r := newRep(t, ReplicatorConfig{})
		c := egressCluster(3e6, 10e9, 10e9)
		seedAt := func(rate float64, now time.Time) { seed(t, r, "t00", rate, now) }
		if sited {
			for i := range c.view.Nodes {
				c.view.Nodes[i].Site = "A"
			}
			seedAt = func(rate float64, now time.Time) {
				seedSites(t, r, "t00", rate, map[string]float64{"A": 1}, now)
			}
		}
		c.node("n1").Items = []Item{{Title: "t00", Bytes: 1 << 30}}
		at := peak.Add(-time.Minute)
		seedAt(2, at)         // 8 Gbit/s
		c.view.OriginFree = 0 // no prefetch at this plan
		c.apply(t, r.Plan(at, &c.view))
		if nodes, k := r.PlannedNodes("t00"); len(nodes) != 2 || k != 2 || slices.Contains(nodes, "n0") {
			t.Fatalf("sites %v: t00 planned on %v with %d replicas, want n1 and n2", sited, nodes, k)
		}
		seedAt(1.4, peak) // 5.6 Gbit/s
		c.view.OriginFree = 100
		acts := r.Plan(peak, &c.view)
		if nodes, k := r.PlannedNodes("t00"); len(nodes) != 2 || k != 2 {
			t.Fatalf("sites %v: t00 planned on %v with %d replicas at the peak, want 2", sited, nodes, k)
		}
		if len(acts) != 0 {
			t.Errorf("sites %v: orders at the peak %v, want none (n1's copy carries today's demand)", sited, acts)
		}
	}
}
