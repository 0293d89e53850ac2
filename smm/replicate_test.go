package smm

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// cluster is a hand-made ClusterView for planner tests: nodes of 10 Gbit/s
// and 100 GB, titles of 4 Mbit/s, 1 GB, 2000 s.
type cluster struct {
	view ClusterView
}

func newCluster(nodes, titles int) *cluster {
	c := &cluster{view: ClusterView{Titles: map[string]TitleInfo{}, OriginFree: 100}}
	for i := range nodes {
		c.view.Nodes = append(c.view.Nodes, NodeView{ID: fmt.Sprintf("n%d", i), Alive: true, DiskBytes: 100 << 30, EgressBps: 10e9})
	}
	for i := range titles {
		id := fmt.Sprintf("t%02d", i)
		c.view.Titles[id] = TitleInfo{ID: id, Bytes: 1 << 30, Bitrate: 4e6, Duration: 2000}
	}
	return c
}

func (c *cluster) node(id string) *NodeView {
	for i := range c.view.Nodes {
		if c.view.Nodes[i].ID == id {
			return &c.view.Nodes[i]
		}
	}
	return nil
}

// apply carries actions out at once: prefetches complete immediately.
func (c *cluster) apply(t *testing.T, acts []Action) {
	t.Helper()
	for _, a := range acts {
		n := c.node(a.Node)
		i := slices.IndexFunc(n.Items, func(it Item) bool { return it.Title == a.Title })
		switch a.Kind {
		case Prefetch:
			if i >= 0 {
				t.Fatalf("prefetch of %s on %s which has it", a.Title, a.Node)
			}
			n.Items = append(n.Items, Item{Title: a.Title, Bytes: c.view.Titles[a.Title].Bytes})
		case Evict:
			if i < 0 || n.Items[i].InUse || n.Items[i].Pinned {
				t.Fatalf("evict of %s on %s: absent, in use or pinned", a.Title, a.Node)
			}
			n.Items = slices.Delete(n.Items, i, i+1)
		}
	}
}

func (c *cluster) holders(title string) []string {
	var out []string
	for _, n := range c.view.Nodes {
		if slices.ContainsFunc(n.Items, func(it Item) bool { return it.Title == title }) {
			out = append(out, n.ID)
		}
	}
	return out
}

// offPeak is 03:00 UTC, inside the default off-peak window; peak is 20:00.
var (
	offPeak = time.Date(2027, 1, 5, 3, 0, 0, 0, time.UTC)
	peak    = time.Date(2027, 1, 5, 20, 0, 0, 0, time.UTC)
)

func newRep(t *testing.T, cfg ReplicatorConfig) *Replicator {
	t.Helper()
	r, err := NewReplicator(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// seed sets a title's demand: rate req/s; with 4 Mbit/s titles lasting
// 2000 s watched half-way, one request per second is 4 Gbit/s.
func seed(t *testing.T, r *Replicator, title string, rate float64, now time.Time) {
	t.Helper()
	if err := r.Popularity().Seed(title, rate, now); err != nil {
		t.Fatal(err)
	}
	if err := r.Ranking().Seed(title, rate, now); err != nil {
		t.Fatal(err)
	}
}

// TestReplicaCountHysteresis: a title's replica count follows its demand
// in node capacities (7 Gbit/s at 70% of 10 Gbit/s), adds a replica above
// 1.0 and drops one only below 0.7 of one fewer.
func TestReplicaCountHysteresis(t *testing.T) {
	r := newRep(t, ReplicatorConfig{PeakHalfLife: time.Nanosecond})
	c := newCluster(6, 1)
	now := offPeak
	step := func(gbps float64) int {
		now = now.Add(time.Second)
		seed(t, r, "t00", gbps/4, now) // 1 req/s = 4 Gbit/s
		c.apply(t, r.Plan(now, &c.view))
		_, k := r.PlannedNodes("t00")
		return k
	}
	for _, tc := range []struct {
		gbps float64
		want int
	}{
		{1, 1}, {6.9, 1}, {7.1, 2}, {13.9, 2}, {14.1, 3}, // adds above r*7 Gbit/s
		{9.9, 3}, {9.7, 2}, // drops below (3-1)*0.7*7 = 9.8 Gbit/s
		{5.0, 2}, {4.8, 1}, // and below 1*0.7*7 = 4.9
		{6.9, 1},
	} {
		if k := step(tc.gbps); k != tc.want {
			t.Fatalf("demand %v Gbit/s: %d replicas, want %d", tc.gbps, k, tc.want)
		}
	}
	if got := len(c.holders("t00")); got < 3 {
		t.Fatalf("replicas prefetched: %d holders, want the 3 ordered at the top", got)
	}
}

// TestPlanStableUnderNoise: once the plan is placed, popularity that moves
// by a few percent changes neither the plan nor the disks.
func TestPlanStableUnderNoise(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(4, 40)
	now := offPeak
	rates := make([]float64, 40)
	for i := range rates {
		rates[i] = 2 / float64(i+1) // Zipf: t00 needs 2 replicas
	}
	round := func(noise float64, i int) []Action {
		now = now.Add(5 * time.Minute)
		for j, x := range rates {
			f := 1 + noise*float64((i*7+j*13)%11-5)/5 // within ±noise
			seed(t, r, fmt.Sprintf("t%02d", j), x*f, now)
		}
		acts := r.Plan(now, &c.view)
		c.apply(t, acts)
		return acts
	}
	for i := range 10 { // at most 2 fills per node per round
		round(0, i)
	}
	changes, moves := r.Stats().PlanChanges, r.Stats().Moves
	if moves == 0 {
		t.Fatal("nothing placed")
	}
	for i := range 100 {
		if acts := round(0.05, i); len(acts) > 0 {
			t.Fatalf("round %d under 5%% noise ordered %v", i, acts)
		}
	}
	if s := r.Stats(); s.PlanChanges != changes || s.Moves != moves {
		t.Fatalf("plan changed under noise: %+v (before %d changes, %d moves)", s, changes, moves)
	}
	if len(c.holders("t00")) != 2 {
		t.Fatalf("t00 on %v, want 2 nodes", c.holders("t00"))
	}
}

// TestHotTitleSpreadsLoad: the replicas of the hottest titles go to
// different nodes, and bigger nodes carry more.
func TestHotTitleSpreadsLoad(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(3, 3)
	c.view.Nodes[0].EgressBps = 20e9
	for i := range 3 {
		seed(t, r, fmt.Sprintf("t%02d", i), 1.5, offPeak) // 6 Gbit/s each
	}
	c.apply(t, r.Plan(offPeak, &c.view))
	for i := range 3 {
		if h := c.holders(fmt.Sprintf("t%02d", i)); len(h) != 1 {
			t.Fatalf("t%02d on %v", i, h)
		}
	}
	big := len(c.node("n0").Items)
	if big < 1 || len(c.node("n1").Items)+len(c.node("n2").Items) != 3-big {
		t.Fatalf("placement %v", c.view.Nodes)
	}
}

// TestPrefetchMakesRoomNeverEvictingInUseOrPinned: a full node evicts
// titles not in the plan, lowest priority first, never one in use or
// pinned; with nothing evictable the prefetch waits.
func TestPrefetchMakesRoomNeverEvictingInUseOrPinned(t *testing.T) {
	pins := &Pins{}
	if _, err := pins.Pin("n0", "pinned"); err != nil {
		t.Fatal(err)
	}
	r, err := NewReplicator(ReplicatorConfig{}, pins)
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(1, 1)
	n := c.node("n0")
	n.DiskBytes = 4 << 30
	for _, x := range []string{"playing", "pinned", "cold", "warm"} {
		c.view.Titles[x] = TitleInfo{ID: x, Bytes: 1 << 30, Bitrate: 4e6, Duration: 2000}
		n.Items = append(n.Items, Item{Title: x, Bytes: 1 << 30, InUse: x == "playing"})
	}
	seed(t, r, "t00", 1, offPeak)
	seed(t, r, "warm", 0.0001, offPeak)
	acts := r.Plan(offPeak, &c.view)
	want := []Action{{Evict, "n0", "cold"}, {Prefetch, "n0", "t00"}}
	if !slices.Equal(acts, want) {
		t.Fatalf("actions %v, want %v", acts, want)
	}
	// Everything in use or pinned: no room, no order.
	r2 := newRep(t, ReplicatorConfig{})
	for i := range n.Items {
		n.Items[i].InUse = true
	}
	seed(t, r2, "t00", 1, offPeak)
	if acts := r2.Plan(offPeak, &c.view); len(acts) != 0 {
		t.Fatalf("actions %v on a node with nothing evictable", acts)
	}
}

// TestPinsPlacedAndProtected: a node pin is prefetched with no demand at
// all; a cluster pin gets one copy; Storage evictors never name them.
func TestPinsPlacedAndProtected(t *testing.T) {
	pins := &Pins{}
	pins.Pin("n1", "t00")
	pins.Pin("", "t01")
	st, err := NewStorage("", StorageConfig{Pins: pins})
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(2, 3)
	acts := st.Planner.Plan(peak, &c.view) // not even off-peak
	c.apply(t, acts)
	if h := c.holders("t00"); !slices.Equal(h, []string{"n1"}) {
		t.Fatalf("node pin on %v", h)
	}
	if h := c.holders("t01"); len(h) != 1 {
		t.Fatalf("cluster pin on %v", h)
	}
	if h := c.holders("t02"); len(h) != 0 {
		t.Fatalf("unrequested title prefetched on %v", h)
	}
	for _, node := range []string{"n0", "n1"} {
		items := append([]Item(nil), c.node(node).Items...)
		items = append(items, Item{Title: "free", Bytes: 1})
		v, ok := st.Evictor(node).Victims(items, 1<<40, peak)
		if ok || !slices.Equal(v, []string{"free"}) {
			t.Fatalf("%s: victims %v ok %v, want only the unpinned title", node, v, ok)
		}
	}
	// Unpinned, t00 is an ordinary title again.
	pins.Unpin("n1", "t00")
	v, _ := st.Evictor("n1").Victims(c.node("n1").Items, 1, peak)
	if !slices.Contains(v, "t00") {
		t.Fatalf("victims %v after unpin", v)
	}
}

// TestStorageEvictorPlannedLast: on a demand fill, a node's Evictor gives
// up titles the plan does not want there before planned ones, whatever
// their popularity, and never one in use.
func TestStorageEvictorPlannedLast(t *testing.T) {
	st, _ := NewStorage("gdsf", StorageConfig{})
	r := st.Replicator
	c := newCluster(1, 2)
	seed(t, r, "t00", 0.01, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	if !r.Planned("n0", "t00") {
		t.Fatal("t00 not planned")
	}
	seed(t, r, "hot-unplanned", 5, offPeak) // not in the catalog view: never planned
	items := []Item{
		{Title: "t00", Bytes: 10},
		{Title: "hot-unplanned", Bytes: 10},
		{Title: "busy", Bytes: 10, InUse: true},
	}
	v, ok := st.Evictor("n0").Victims(items, 10, offPeak)
	if !ok || !slices.Equal(v, []string{"hot-unplanned"}) {
		t.Fatalf("victims %v", v)
	}
	v, ok = st.Evictor("n0").Victims(items, 20, offPeak)
	if !ok || !slices.Equal(v, []string{"hot-unplanned", "t00"}) {
		t.Fatalf("victims %v", v)
	}
	if _, ok := st.Evictor("n0").Victims(items, 30, offPeak); ok {
		t.Fatal("claimed to free a title in use")
	}
}

// TestNodePinOutranksPlannedTitles: a node whose disk is full of titles
// the plan keeps there still makes room for a title pinned to it, at the
// first plan after the pin, evicting the least valuable planned title.
func TestNodePinOutranksPlannedTitles(t *testing.T) {
	st, err := NewStorage("gdsf", StorageConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Replicator
	c := newCluster(2, 3) // n1's large disk leaves the cluster room in its plan
	n0 := c.node("n0")
	n0.DiskBytes = 2 << 30 // full with two titles
	n0.Items = []Item{{Title: "t00", Bytes: 1 << 30}, {Title: "t01", Bytes: 1 << 30}}
	seed(t, r, "t00", 0.02, offPeak)
	seed(t, r, "t01", 0.01, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	if !r.Planned("n0", "t00") || !r.Planned("n0", "t01") {
		t.Fatal("the titles n0 holds are not planned there")
	}
	if _, err := st.Pins().Pin("n0", "t02"); err != nil {
		t.Fatal(err)
	}
	now := offPeak.Add(time.Minute)
	acts := r.Plan(now, &c.view)
	c.apply(t, acts)
	if !slices.Equal(c.holders("t02"), []string{"n0"}) {
		t.Fatalf("pinned title not fetched: actions %v", acts)
	}
	if h := c.holders("t01"); len(h) != 0 || !slices.Equal(c.holders("t00"), []string{"n0"}) {
		t.Fatalf("evicted the wrong title: t00 on %v, t01 on %v", c.holders("t00"), h)
	}
}

// TestFillsHideBackoffTheyNoLongerWant: a failed prefetch is listed in
// backoff while the plan still wants the title on that node, and no
// longer once the plan moved it elsewhere (nothing will retry it there).
func TestFillsHideBackoffTheyNoLongerWant(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 1)
	seed(t, r, "t00", 0.01, offPeak)
	acts := r.Plan(offPeak, &c.view)
	if len(acts) != 1 || acts[0].Kind != Prefetch {
		t.Fatalf("actions %v, want one prefetch", acts)
	}
	where := acts[0].Node
	r.FillFailed(where, "t00", offPeak)
	if fs := r.Fills(); len(fs) != 1 || fs[0].State != FillBackoff || fs[0].Node != where {
		t.Fatalf("after the failure: %+v", fs)
	}
	c.node(where).Alive = false
	r.Plan(offPeak.Add(time.Minute), &c.view)
	if r.Planned(where, "t00") {
		t.Fatal("still planned on the dead node")
	}
	for _, f := range r.Fills() {
		if f.Node == where {
			t.Fatalf("stale backoff listed: %+v", f)
		}
	}
}

// TestOperatorEvictionHolds: a title the operator evicted from a node is
// not planned (nor prefetched) there again for EvictHold, then is; a pin
// to the node overrides the hold.
func TestOperatorEvictionHolds(t *testing.T) {
	r := newRep(t, ReplicatorConfig{EvictHold: time.Hour})
	c := newCluster(1, 1)
	seed(t, r, "t00", 0.01, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	if !slices.Equal(c.holders("t00"), []string{"n0"}) {
		t.Fatal("t00 not prefetched")
	}
	now := offPeak.Add(time.Minute)
	c.apply(t, []Action{{Kind: Evict, Node: "n0", Title: "t00"}})
	r.Evicted("n0", "t00", now)
	for m := 1; m <= 50; m += 7 {
		if acts := r.Plan(now.Add(time.Duration(m)*time.Minute), &c.view); len(acts) != 0 {
			t.Fatalf("%d min after the eviction: %v", m, acts)
		}
		if r.Planned("n0", "t00") {
			t.Fatal("still planned where the operator evicted it")
		}
		if id, err := r.ChooseNode("t00", &c.view, now.Add(time.Duration(m)*time.Minute)); err == nil {
			t.Fatalf("ChooseNode picks %s, where the operator evicted it", id)
		}
	}
	acts := r.Plan(now.Add(61*time.Minute), &c.view)
	if len(acts) != 1 || acts[0] != (Action{Kind: Prefetch, Node: "n0", Title: "t00"}) {
		t.Fatalf("after the hold: %v", acts)
	}
	c.apply(t, acts)
	r.Plan(now.Add(62*time.Minute), &c.view) // sees the fill done
	// Evicted again, but pinned there: the pin wins.
	later := now.Add(2 * time.Hour)
	c.apply(t, []Action{{Kind: Evict, Node: "n0", Title: "t00"}})
	r.Evicted("n0", "t00", later)
	if _, err := r.Pins().Pin("n0", "t00"); err != nil {
		t.Fatal(err)
	}
	if acts := r.Plan(later.Add(time.Minute), &c.view); len(acts) != 1 || acts[0].Kind != Prefetch {
		t.Fatalf("pinned after an eviction: %v", acts)
	}
}

// TestOperatorPrefetchLiftsItsEvictionHold: evicted by hand, then
// prefetched by hand on the same node: the copy is planned there again
// (not left unplanned, first to be evicted, with a second copy ordered
// elsewhere).
func TestOperatorPrefetchLiftsItsEvictionHold(t *testing.T) {
	r := newRep(t, ReplicatorConfig{EvictHold: time.Hour})
	c := newCluster(2, 1)
	seed(t, r, "t00", 0.01, offPeak)
	c.apply(t, r.Plan(offPeak, &c.view))
	where := c.holders("t00")
	if len(where) != 1 {
		t.Fatalf("t00 on %v", where)
	}
	now := offPeak.Add(time.Minute)
	c.apply(t, []Action{{Kind: Evict, Node: where[0], Title: "t00"}})
	r.Evicted(where[0], "t00", now)
	c.apply(t, []Action{{Kind: Prefetch, Node: where[0], Title: "t00"}})
	r.Prefetched(where[0], "t00", 1<<30, now)
	acts := r.Plan(now.Add(time.Minute), &c.view)
	if len(acts) != 0 || !r.Planned(where[0], "t00") {
		t.Fatalf("after the operator's prefetch: planned there %v, actions %v", r.Planned(where[0], "t00"), acts)
	}
}

// TestClusterPinAvoidsNodeFullOfNodePins: one node's disk is full of
// titles pinned to it, the other is empty: a title pinned to the cluster,
// worth more than those, is prefetched on the empty node (it was planned
// on the full one, where no room could be made, for ever).
func TestClusterPinAvoidsNodeFullOfNodePins(t *testing.T) {
	pins := &Pins{}
	r, err := NewReplicator(ReplicatorConfig{}, pins)
	if err != nil {
		t.Fatal(err)
	}
	now := peak
	v := ClusterView{Titles: map[string]TitleInfo{}, OriginFree: 4}
	for _, id := range []string{"a1", "a2", "a3", "hot"} {
		v.Titles[id] = TitleInfo{ID: id, Bytes: 1_500_000, Bitrate: 600_000, Duration: 20}
	}
	if err := r.Seed("hot", 1000.0/86400, now); err != nil {
		t.Fatal(err)
	}
	it := func(id string) Item { return Item{Title: id, Bytes: 1_500_000, Pinned: true} }
	v.Nodes = []NodeView{
		{ID: "nA", Alive: true, DiskBytes: 5_000_000, EgressBps: 1e8, Items: []Item{it("a1"), it("a2"), it("a3")}},
		{ID: "nB", Alive: true, DiskBytes: 5_000_000, EgressBps: 1e8},
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		if _, err := pins.Pin("nA", id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pins.Pin("", "hot"); err != nil {
		t.Fatal(err)
	}
	acts := r.Plan(now, &v)
	if !slices.Equal(acts, []Action{{Kind: Prefetch, Node: "nB", Title: "hot"}}) {
		t.Fatalf("actions %v, want hot prefetched on nB", acts)
	}
}

// TestOperatorOrdersGetAChannelAtThePeak: at the peak the plan's own
// prefetches get a quarter of the free origin channels (none of 3), but a
// pin still gets one; an operator's prefetch that failed is retried
// when its backoff ends, although no plan wants the title.
func TestOperatorOrdersGetAChannelAtThePeak(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(1, 3)
	c.view.OriginFree = 3
	seed(t, r, "t02", 1, peak) // in demand, but the plan waits for off-peak or more channels
	if _, err := r.Pins().Pin("n0", "t00"); err != nil {
		t.Fatal(err)
	}
	acts := r.Plan(peak, &c.view)
	if !slices.Equal(acts, []Action{{Kind: Prefetch, Node: "n0", Title: "t00"}}) {
		t.Fatalf("at the peak with 3 free channels: %v, want the pin only", acts)
	}
	c.apply(t, acts)

	r.Prefetched("n0", "t01", 1<<30, peak)
	r.FillFailed("n0", "t01", peak)
	fs := r.Fills()
	i := slices.IndexFunc(fs, func(f FillStatus) bool { return f.Title == "t01" })
	if i < 0 || fs[i].State != FillBackoff {
		t.Fatalf("the operator's failed prefetch: %+v", fs)
	}
	if acts := r.Plan(fs[i].NextTry.Add(-time.Second), &c.view); slices.ContainsFunc(acts, func(a Action) bool { return a.Title == "t01" }) {
		t.Fatalf("retried before its backoff ended: %v", acts)
	}
	acts = r.Plan(fs[i].NextTry.Add(time.Second), &c.view)
	if !slices.Contains(acts, Action{Kind: Prefetch, Node: "n0", Title: "t01"}) {
		t.Fatalf("not retried after its backoff: %v", acts)
	}
}

// TestOperatorPrefetchRetriesEnd: an operator's prefetch that keeps
// failing is given up after MaxHandRetries attempts; one the operator
// evicts, or cancels, is not retried.
func TestOperatorPrefetchRetriesEnd(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(1, 3)
	now := offPeak
	r.Prefetched("n0", "t00", 1<<30, now)
	orders := 0
	for i := range 3 * MaxHandRetries {
		givenUp := r.FillFailed("n0", "t00", now)
		fs := r.Fills()
		if givenUp != (len(fs) == 0) || givenUp != (i == MaxHandRetries-1) {
			t.Fatalf("failure %d: FillFailed says given up %v, fills %v", i+1, givenUp, fs)
		}
		if len(fs) == 0 {
			break
		}
		now = fs[0].NextTry.Add(time.Second)
		if slices.Contains(r.Plan(now, &c.view), Action{Kind: Prefetch, Node: "n0", Title: "t00"}) {
			orders++
		}
	}
	if orders != MaxHandRetries-1 || len(r.Fills()) != 0 {
		t.Fatalf("%d retries, fills %v; want %d and none left", orders, r.Fills(), MaxHandRetries-1)
	}

	r.Prefetched("n0", "t01", 1<<30, now)
	r.FillFailed("n0", "t01", now)
	r.Evicted("n0", "t01", now)
	r.Prefetched("n0", "t02", 1<<30, now)
	r.FillFailed("n0", "t02", now)
	if !r.CancelPrefetch("n0", "t02", false) || r.CancelPrefetch("n0", "t02", false) {
		t.Fatal("CancelPrefetch: want true once")
	}
	if acts := r.Plan(now.Add(2*time.Hour), &c.view); len(acts) != 0 || len(r.Fills()) != 0 {
		t.Fatalf("evicted or cancelled prefetches retried: %v, fills %v", acts, r.Fills())
	}
}
