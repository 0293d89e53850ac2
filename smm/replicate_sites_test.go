package smm

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"testing"
	"time"
)

// sitedCluster is newCluster with its nodes at sites: sites[i] nodes at
// site names[i], each named after its site (A0, A1, B0, ...).
func sitedCluster(titles int, names []string, sizes []int) *cluster {
	c := newCluster(0, titles)
	for i, s := range names {
		for j := range sizes[i] {
			c.view.Nodes = append(c.view.Nodes, NodeView{ID: fmt.Sprintf("%s%d", s, j), Site: s, Alive: true, DiskBytes: 100 << 30, EgressBps: 10e9})
		}
	}
	return c
}

// seedSites sets title's demand to rate req/s in both trackers (as seed),
// of which each site of shares makes its share (the rest: no site).
func seedSites(t *testing.T, r *Replicator, title string, rate float64, shares map[string]float64, now time.Time) {
	t.Helper()
	var ss []SiteShare
	for _, s := range slices.Sorted(maps.Keys(shares)) {
		ss = append(ss, SiteShare{Site: s, Share: shares[s]})
	}
	w := rate * r.Popularity().halfLife().Seconds() / math.Ln2
	if err := r.Popularity().Restore([]PopularityEntry{{Title: title, Count: 1, Weight: w, Sites: ss}}, now); err != nil {
		t.Fatal(err)
	}
	if err := r.Ranking().Seed(title, rate, now); err != nil {
		t.Fatal(err)
	}
}

// siteOf returns the site of node id in c.
func (c *cluster) siteOf(id string) string { return c.node(id).Site }

// plannedSites returns how many of title's planned nodes are at each site.
func plannedSites(r *Replicator, c *cluster, title string) map[string]int {
	nodes, _ := r.PlannedNodes(title)
	out := map[string]int{}
	for _, n := range nodes {
		out[c.siteOf(n)]++
	}
	return out
}

// TestSitesTitleHotAtOneSite: a title whose viewers are all at site A
// gets its replicas (2: 10 Gbit/s) on A's nodes, prefetched there; one
// asked for at B only, its replica at B.
func TestSitesTitleHotAtOneSite(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(2, []string{"A", "B"}, []int{3, 3})
	seedSites(t, r, "t00", 2.5, map[string]float64{"A": 1}, offPeak)
	seedSites(t, r, "t01", 0.25, map[string]float64{"B": 1}, offPeak)
	acts := r.Plan(offPeak, &c.view)
	c.apply(t, acts)
	if got := plannedSites(r, c, "t00"); fmt.Sprint(got) != "map[A:2]" {
		t.Fatalf("t00 planned at %v, want 2 at A", got)
	}
	if got := plannedSites(r, c, "t01"); fmt.Sprint(got) != "map[B:1]" {
		t.Fatalf("t01 planned at %v, want 1 at B", got)
	}
	want := map[string]string{"t00": "A", "t01": "B"}
	n := 0
	for _, a := range acts {
		if a.Kind == Prefetch {
			n++
			if s := c.siteOf(a.Node); s != want[a.Title] {
				t.Errorf("prefetch of %s on %s at site %s, want site %s", a.Title, a.Node, s, want[a.Title])
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d prefetches, want 3: %v", n, acts)
	}
	if got := r.SiteReplicas("t00"); fmt.Sprint(got) != "map[A:2]" {
		t.Fatalf("SiteReplicas(t00) = %v", got)
	}
}

// TestSitesReplicasInProportion: a title hot at both sites has its 4
// replicas (25 Gbit/s) at the sites in proportion to their viewers'
// shares (3:1 for 75%/25%, 2:2 for half each); a title whose demand is
// spread thin (one replica, half at each site) is held once.
func TestSitesReplicasInProportion(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(3, []string{"A", "B"}, []int{4, 4})
	seedSites(t, r, "t00", 6.25, map[string]float64{"A": 0.75, "B": 0.25}, offPeak)
	seedSites(t, r, "t01", 6.25, map[string]float64{"A": 0.5, "B": 0.5}, offPeak)
	seedSites(t, r, "t02", 0.25, map[string]float64{"A": 0.5, "B": 0.5}, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	for title, want := range map[string]string{"t00": "map[A:3 B:1]", "t01": "map[A:2 B:2]", "t02": "map[A:1]"} {
		if got := plannedSites(r, c, title); fmt.Sprint(got) != want {
			t.Errorf("%s planned at %v, want %s", title, got, want)
		}
		if got := fmt.Sprint(plannedSites(r, c, title)); len(c.holders(title)) != len(r.plan[title].nodes) {
			t.Errorf("%s: holders %v, planned %s", title, c.holders(title), got)
		}
	}
	if got := r.SiteReplicas("t02"); got != nil {
		t.Errorf("the thin title's replica is a site's: %v", got)
	}
}

// TestSitesDemandMovesWithHysteresis: a title's viewers move from site A
// to site B (requests observed with their sites). Its one replica stays
// at A until B's share of the demand reaches 0.65 of a replica, then
// moves to B: one prefetch there, counted as a move, and two plan
// changes. When A's viewers come back to half the demand, it stays at B.
func TestSitesDemandMovesWithHysteresis(t *testing.T) {
	r := newRep(t, ReplicatorConfig{HalfLife: 10 * time.Minute})
	c := sitedCluster(1, []string{"A", "B"}, []int{2, 2})
	now := offPeak
	step := func(a, b int) []Action {
		now = now.Add(time.Minute)
		for range a {
			r.ObserveSite("t00", "A", now)
		}
		for range b {
			r.ObserveSite("t00", "B", now)
		}
		acts := r.Plan(now, &c.view)
		c.apply(t, acts)
		return acts
	}
	for range 10 {
		step(20, 0)
	}
	if got := plannedSites(r, c, "t00"); fmt.Sprint(got) != "map[A:1]" {
		t.Fatalf("planned at %v, want A", got)
	}
	if _, k := r.PlannedNodes("t00"); k != 1 {
		t.Fatalf("%d replicas, want 1", k)
	}
	before := r.Stats()
	moved := 0
	for i := range 60 {
		acts := step(0, 20)
		shareB := r.Popularity().SiteShare("t00", "B") // what that plan saw: shares do not decay
		at := plannedSites(r, c, "t00")
		switch {
		case shareB < 0.65 && at["A"] != 1:
			t.Fatalf("step %d: B's share %.3f, planned at %v: moved too early", i, shareB, at)
		case shareB >= 0.65 && at["B"] != 1:
			t.Fatalf("step %d: B's share %.3f, planned at %v: not moved", i, shareB, at)
		}
		for _, a := range acts {
			if a.Kind == Prefetch && c.siteOf(a.Node) == "B" {
				moved++
			}
		}
	}
	if moved != 1 {
		t.Fatalf("%d prefetches at B, want 1", moved)
	}
	after := r.Stats()
	if d := after.Moves - before.Moves; d != 1 || after.Prefetches-before.Prefetches != 1 {
		t.Fatalf("moves %d, prefetches %d: want the one prefetch", d, after.Prefetches-before.Prefetches)
	}
	if d := after.PlanChanges - before.PlanChanges; d != 2 {
		t.Fatalf("plan changes %d, want 2 (A's node out, B's in)", d)
	}
	// A's viewers come back to half the requests: B's share falls
	// towards 0.5, inside the band; the replica stays.
	inBand := 0
	for i := range 30 {
		acts := step(20, 20)
		s := r.Popularity().SiteShare("t00", "B")
		if s > 0.35 && s < 0.65 {
			inBand++
		}
		if len(acts) > 0 || fmt.Sprint(plannedSites(r, c, "t00")) != "map[B:1]" {
			t.Fatalf("step %d: B's share %.3f: orders %v, planned at %v; want it kept at B", i, s, acts, plannedSites(r, c, "t00"))
		}
	}
	if inBand == 0 {
		t.Fatal("B's share never came inside the band: the test proves nothing")
	}
	if r.Stats().PlanChanges != after.PlanChanges {
		t.Fatal("the plan changed inside the band")
	}
}

// TestSitesWithoutNodesFallBackToTheCluster: the demand of a site with
// no alive node (C has none, B's only node is dead) is the cluster's: the
// title is placed once, on any alive node, and prefetched.
func TestSitesWithoutNodesFallBackToTheCluster(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(3, []string{"A", "B"}, []int{2, 1})
	c.node("B0").Alive = false
	c.view.Nodes = append(c.view.Nodes, NodeView{ID: "U0", Alive: true, DiskBytes: 100 << 30, EgressBps: 10e9}) // no site
	seedSites(t, r, "t00", 0.25, map[string]float64{"C": 1}, offPeak)
	seedSites(t, r, "t01", 0.25, map[string]float64{"B": 1}, offPeak)
	seedSites(t, r, "t02", 0.25, map[string]float64{"A": 1}, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	for _, title := range []string{"t00", "t01"} {
		nodes, k := r.PlannedNodes(title)
		if k != 1 || len(nodes) != 1 || nodes[0] == "B0" || r.SiteReplicas(title) != nil {
			t.Errorf("%s: planned on %v (%d replicas), sites %v: want once, on an alive node, the cluster's", title, nodes, k, r.SiteReplicas(title))
		}
		if h := c.holders(title); !slices.Equal(h, nodes) {
			t.Errorf("%s: held on %v, planned on %v", title, h, nodes)
		}
	}
	if got := plannedSites(r, c, "t02"); fmt.Sprint(got) != "map[A:1]" {
		t.Errorf("t02 planned at %v, want A", got)
	}
}

// TestSitesOnRequestsOnlyPlanAsWithout: with no site on any node, the
// requests' sites change nothing: the same orders as from requests of no
// site, plan after plan.
func TestSitesOnRequestsOnlyPlanAsWithout(t *testing.T) {
	a, b := newRep(t, ReplicatorConfig{}), newRep(t, ReplicatorConfig{})
	ca, cb := newCluster(4, 40), newCluster(4, 40)
	now := offPeak
	sites := []string{"A", "B", ""}
	for i := range 20 {
		now = now.Add(5 * time.Minute)
		for j := range 40 {
			for k := range 40 / (j + 1) {
				title := fmt.Sprintf("t%02d", j)
				a.ObserveSite(title, sites[(i+j+k)%3], now)
				b.Observe(title, now)
			}
		}
		pa, pb := a.Plan(now, &ca.view), b.Plan(now, &cb.view)
		if !slices.Equal(pa, pb) {
			t.Fatalf("plan %d differs:\n%v\n%v", i, pa, pb)
		}
		ca.apply(t, pa)
		cb.apply(t, pb)
	}
	if a.Stats() != b.Stats() {
		t.Fatalf("stats differ: %+v, %+v", a.Stats(), b.Stats())
	}
}

// TestSitesEvictionKeepsTheSitesOnlyCopy: B0's disk is full with x and y,
// of equal value; z, pinned to B0, needs the room of one. x is site B's
// only copy (A holds two, which would make it the cheapest to lose for
// the cluster); y has another copy at B, on B1. With sites, y goes;
// without (the same cluster, no node naming a site), x goes.
func TestSitesEvictionKeepsTheSitesOnlyCopy(t *testing.T) {
	for _, sited := range []bool{true, false} {
		r := newRep(t, ReplicatorConfig{})
		c := newCluster(0, 0)
		for _, id := range []string{"x", "y", "z"} {
			c.view.Titles[id] = TitleInfo{ID: id, Bytes: 1 << 30, Bitrate: 4e6, Duration: 2000}
		}
		item := func(id string) Item { return Item{Title: id, Bytes: 1 << 30} }
		for _, n := range []NodeView{
			{ID: "A0", Site: "A", Items: []Item{item("x")}},
			{ID: "A1", Site: "A", Items: []Item{item("x")}},
			{ID: "B1", Site: "B", Items: []Item{item("y")}},
			{ID: "B0", Site: "B", Items: []Item{item("x"), item("y")}, DiskBytes: 2 << 30},
		} {
			n.Alive, n.EgressBps = true, 10e9
			if n.DiskBytes == 0 {
				n.DiskBytes = 100 << 30
			}
			if !sited {
				n.Site = ""
			}
			c.view.Nodes = append(c.view.Nodes, n)
		}
		if _, err := r.Pins().Pin("B0", "z"); err != nil {
			t.Fatal(err)
		}
		seedSites(t, r, "x", 0.01, map[string]float64{"A": 1}, offPeak)
		seedSites(t, r, "y", 0.01, map[string]float64{"B": 1}, offPeak)
		seedSites(t, r, "z", 0.5, map[string]float64{"B": 1}, offPeak)
		acts := r.Plan(offPeak, &c.view)
		var evicted []string
		for _, a := range acts {
			if a.Kind == Evict {
				evicted = append(evicted, a.Node+"/"+a.Title)
			}
		}
		want, copies := "[B0/y]", 0
		if !sited {
			want, copies = "[B0/x]", 2
		}
		if fmt.Sprint(evicted) != want {
			t.Errorf("sites %v: evicted %v, want %s (orders %v)", sited, evicted, want, acts)
		}
		if got := r.Copies("B0", "x"); got != copies {
			t.Errorf("sites %v: Copies(B0, x) = %d, want %d", sited, got, copies)
		}
	}
}

// TestSiteOnlyCopyKeptByTheEvictionPlan: a title the plan places at B on
// another node (B1, its copy still to come) is not evicted from B0, which
// holds B's only copy, to make room for a prefetch there.
func TestSiteOnlyCopyKeptByTheEvictionPlan(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(0, []string{"B"}, []int{2})
	c.view.Titles["w"] = TitleInfo{ID: "w", Bytes: 1 << 30}
	c.view.Titles["v"] = TitleInfo{ID: "v", Bytes: 1 << 30}
	c.node("B0").Items = []Item{{Title: "w", Bytes: 1 << 30}, {Title: "v", Bytes: 1 << 30}}
	r.plan = map[string]*titlePlan{"w": {replicas: 1, nodes: []string{"B1"}}}
	alive := r.sync(offPeak, &c.view)
	r.groupSites(alive)
	var b0 *nodeState
	for _, ns := range alive {
		if ns.v.ID == "B0" {
			b0 = ns
		}
	}
	if !r.siteOnlyCopy(b0, "w") || r.siteOnlyCopy(b0, "v") {
		t.Fatalf("siteOnlyCopy: w %v, v %v; want true, false", r.siteOnlyCopy(b0, "w"), r.siteOnlyCopy(b0, "v"))
	}
	victims, ok := r.roomOn(b0, 1<<30, offPeak, false)
	if !ok || fmt.Sprint(victims) != "[v]" {
		t.Fatalf("victims %v %v, want [v]", victims, ok)
	}
	if _, ok := r.roomOn(b0, 2<<30, offPeak, false); ok {
		t.Fatal("room made with B's only copy of w")
	}
}

// TestPopularitySiteShares: each site's share of a title's decayed
// requests; shares outlive decay, pruning (records moved), a plan job's
// copy, and a snapshot; a raised seed counts as from no site; a tracker
// that never saw a site keeps nothing for sites.
func TestPopularitySiteShares(t *testing.T) {
	p := NewPopularity(time.Hour)
	now := offPeak
	for range 100 {
		p.Observe("plain", now)
	}
	if p.shares != nil || p.sites != nil || p.SiteShares("plain") != nil {
		t.Fatal("a tracker without sites keeps shares")
	}
	for _, s := range []string{"A", "A", "A", "B", ""} {
		p.ObserveSite("t", s, now)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-5 {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	near("A", p.SiteShare("t", "A"), 0.6)
	near("B", p.SiteShare("t", "B"), 0.2)
	near("plain A", p.SiteShare("plain", "A"), 0)
	now = now.Add(3 * time.Hour)
	p.ObserveSite("t", "B", now) // 5 requests decayed to 5/8, then one from B
	near("A after decay", p.SiteShare("t", "A"), 0.6*0.625/1.625)
	near("B after decay", p.SiteShare("t", "B"), (0.2*0.625+1)/1.625)
	a, b := p.SiteShare("t", "A"), p.SiteShare("t", "B")
	if err := p.Seed("t", 2*p.Rate("t", now), now); err != nil {
		t.Fatal(err)
	}
	near("A after seed", p.SiteShare("t", "A"), a/2)
	// Many titles, most pruned: the survivors keep their own shares.
	for i := range 50 {
		for range i % 5 {
			p.ObserveSite(fmt.Sprint("m", i), []string{"A", "B", "C"}[i%3], now)
		}
	}
	now = now.Add(6 * time.Hour)
	p.Prune(0.05, now) // those of 1 request decayed to 1/64 go
	for i := range 50 {
		title, site := fmt.Sprint("m", i), []string{"A", "B", "C"}[i%3]
		if kept := i%5 == 4; p.has(title) != kept {
			t.Fatalf("%s kept %v, want %v", title, p.has(title), kept)
		} else if kept {
			near(title, p.SiteShare(title, site), 1)
		}
	}
	q := p.copyInto(nil)
	q.reindex()
	p.ObserveSite("t", "C", now)
	if q.SiteShare("t", "C") != 0 || p.SiteShare("t", "C") == 0 {
		t.Fatal("the copy changed with the original, or the original did not")
	}
	near("copy B", q.SiteShare("t", "B"), b/2)
	// Snapshot and restore.
	snap := p.Snapshot(now)
	r := NewPopularity(time.Hour)
	if err := r.Restore(snap, now); err != nil {
		t.Fatal(err)
	}
	for _, e := range snap {
		if fmt.Sprint(r.SiteShares(e.Title)) != fmt.Sprint(e.Sites) || !sort.SliceIsSorted(e.Sites, func(i, j int) bool { return e.Sites[i].Site < e.Sites[j].Site }) {
			t.Fatalf("%s: restored %v, snapshot %v", e.Title, r.SiteShares(e.Title), e.Sites)
		}
	}
	for _, bad := range [][]SiteShare{
		{{Site: "", Share: 0.5}},
		{{Site: "A", Share: 1.5}},
		{{Site: "A", Share: math.NaN()}},
		{{Site: "A", Share: 0.5}, {Site: "A", Share: 0.1}},
		{{Site: "A", Share: 0.7}, {Site: "B", Share: 0.7}},
	} {
		if err := r.Restore([]PopularityEntry{{Title: "t", Weight: 1, Sites: bad}}, now); err == nil {
			t.Errorf("shares %v accepted", bad)
		}
	}
	// Beyond MaxSites a site counts as none.
	s := NewPopularity(time.Hour)
	for i := range MaxSites + 1 {
		s.ObserveSite("t", fmt.Sprint("s", i), now)
	}
	if len(s.Sites()) != MaxSites || s.SiteShare("t", fmt.Sprint("s", MaxSites)) != 0 {
		t.Fatalf("%d sites kept, the last's share %v", len(s.Sites()), s.SiteShare("t", fmt.Sprint("s", MaxSites)))
	}
	near("first of many", s.SiteShare("t", "s0"), 1.0/float64(MaxSites+1))
}

// TestSitesObservedDuringAPlanJob: requests with their sites observed
// while a plan job runs are replayed on its state.
func TestSitesObservedDuringAPlanJob(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(1, []string{"A", "B"}, []int{1, 1})
	r.ObserveSite("t00", "A", offPeak)
	j := r.StartPlan(offPeak)
	r.ObserveSite("t00", "B", offPeak)
	j.Run(&c.view)
	r.FinishPlan(j)
	if a, b := r.Popularity().SiteShare("t00", "A"), r.Popularity().SiteShare("t00", "B"); math.Abs(a-0.5) > 1e-6 || math.Abs(b-0.5) > 1e-6 {
		t.Fatalf("shares after the job: A %v, B %v; want half each", a, b)
	}
	if r.nodeSite["B0"] != "B" {
		t.Fatalf("the plan's node sites were not kept: %v", r.nodeSite)
	}
}

// TestChooseNodeAtTheViewersSite: the operator's prefetch without a node
// goes to the site whose viewers ask for the title, though a node of the
// other site is emptier; without sites' demand, to the emptiest.
func TestChooseNodeAtTheViewersSite(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := sitedCluster(3, []string{"A", "B"}, []int{1, 1})
	c.node("B0").Items = []Item{{Title: "t01", Bytes: 1 << 30}}
	r.ObserveSite("t00", "B", offPeak)
	r.Observe("t02", offPeak)
	for title, want := range map[string]string{"t00": "B0", "t02": "A0"} {
		if got, err := r.ChooseNode(title, &c.view, offPeak); err != nil || got != want {
			t.Errorf("ChooseNode(%s) = %s, %v; want %s", title, got, err, want)
		}
	}
}
