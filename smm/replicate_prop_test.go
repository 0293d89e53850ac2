package smm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestPlanInvariants is a property test over random clusters and demand:
// whatever the view, Plan never evicts a title in use, filling or pinned,
// never orders a prefetch of a title the node has (or is filling, or was
// ordered and not yet seen), keeps every node within MaxFillsPerNode, its
// disk within its size after its own evictions, and the prefetches within
// the free origin channels.
func TestPlanInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	kinds := map[ActionKind]int{}
	defer func() {
		t.Logf("actions %v", kinds)
		if kinds[Prefetch] < 100 || kinds[Evict] < 20 {
			t.Errorf("too few actions to mean anything: %v", kinds)

		}
	}()
	for round := range 60 {
		pins := &Pins{}
		r, err := NewReplicator(ReplicatorConfig{MaxFillsPerNode: 1 + rng.IntN(3)}, pins)
		if err != nil {
			t.Fatal(err)
		}
		nTitles := 5 + rng.IntN(60)
		c := &ClusterView{Titles: map[string]TitleInfo{}}
		for i := range nTitles {
			id := fmt.Sprintf("t%03d", i)
			c.Titles[id] = TitleInfo{ID: id, Bytes: (1 + rng.Int64N(8)) << 30, Bitrate: 2e6 + rng.Int64N(14e6), Duration: 600 + rng.Float64()*6000}
		}
		for i := range 1 + rng.IntN(8) {
			c.Nodes = append(c.Nodes, NodeView{ID: fmt.Sprintf("n%d", i), Alive: rng.IntN(6) > 0,
				DiskBytes: (4 + rng.Int64N(20)) << 30, EgressBps: (1 + rng.Int64N(10)) * 1e9})
		}
		now := time.Date(2027, 3, 1, rng.IntN(24), 0, 0, 0, time.UTC)
		for step := range 12 {
			now = now.Add(time.Duration(1+rng.IntN(600)) * time.Second)
			shift := rng.IntN(nTitles) // favourites change from step to step
			for range rng.IntN(400) {
				// Zipf-ish requests.
				i := (shift + int(float64(nTitles)*rng.Float64()*rng.Float64())) % nTitles
				r.Observe(fmt.Sprintf("t%03d", i), now)
			}
			// Fills on demand land where they fit.
			for range rng.IntN(4) {
				n := &c.Nodes[rng.IntN(len(c.Nodes))]
				id := fmt.Sprintf("t%03d", rng.IntN(nTitles))
				var used int64
				for _, it := range n.Items {
					used += it.Bytes
				}
				if !slices.ContainsFunc(n.Items, func(it Item) bool { return it.Title == id }) && used+c.Titles[id].Bytes <= n.DiskBytes {
					n.Items = append(n.Items, Item{Title: id, Bytes: c.Titles[id].Bytes})
				}
			}
			if rng.IntN(5) == 0 {
				pins.Pin(c.Nodes[rng.IntN(len(c.Nodes))].ID, fmt.Sprintf("t%03d", rng.IntN(nTitles)))
			}
			c.OriginFree = rng.IntN(6) - 1
			// Random disk states: items in use, filling, pinned.
			for i := range c.Nodes {
				n := &c.Nodes[i]
				n.Fills = 0
				for j := range n.Items {
					n.Items[j].InUse = rng.IntN(4) == 0
					n.Items[j].Filling = n.Items[j].InUse && rng.IntN(3) == 0
					if n.Items[j].Filling {
						n.Fills++
					}
				}
			}
			// Prefetches ordered and not in the view: still to come.
			pending := map[fillKey]bool{}
			for _, f := range r.Fills() {
				if f.State != FillOrdered {
					continue
				}
				for i := range c.Nodes {
					n := &c.Nodes[i]
					if n.ID == f.Node && n.Alive && !slices.ContainsFunc(n.Items, func(it Item) bool { return it.Title == f.Title }) {
						pending[fillKey{f.Node, f.Title}] = true
					}
				}
			}
			acts := r.Plan(now, c)
			for _, a := range acts {
				kinds[a.Kind]++
			}
			prefetches := 0
			fills := map[string]int{}
			for i := range c.Nodes {
				fills[c.Nodes[i].ID] = c.Nodes[i].Fills
			}
			for k := range pending {
				fills[k.node]++
			}
			// forPin reports whether the eviction acts[i] makes room for a
			// prefetch of a title pinned to its node (the next prefetch).
			forPin := func(i int) bool {
				for _, b := range acts[i+1:] {
					if b.Kind == Prefetch {
						return b.Node == acts[i].Node && pins.Pinned(b.Node, b.Title)
					}
				}
				return false
			}
			for ai, a := range acts {
				var n *NodeView
				for i := range c.Nodes {
					if c.Nodes[i].ID == a.Node {
						n = &c.Nodes[i]
					}
				}
				if n == nil || !n.Alive {
					t.Fatalf("round %d step %d: %v on a dead or unknown node", round, step, a)
				}
				idx := -1
				for j := range n.Items {
					if n.Items[j].Title == a.Title {
						idx = j
					}
				}
				switch a.Kind {
				case Evict:
					if idx < 0 {
						t.Fatalf("round %d: evict of absent %v", round, a)
					}
					it := n.Items[idx]
					if it.InUse || it.Filling || it.Pinned || pins.Protects(n.ID, it.Title) || (r.Planned(n.ID, it.Title) && !forPin(ai)) {
						t.Fatalf("round %d: evicted %+v (planned %v)", round, it, r.Planned(n.ID, it.Title))
					}
					n.Items = append(n.Items[:idx], n.Items[idx+1:]...)
				case Prefetch:
					prefetches++
					fills[n.ID]++
					if idx >= 0 || pending[fillKey{n.ID, a.Title}] {
						t.Fatalf("round %d: second fill %v", round, a)
					}
					if fills[n.ID] > r.Config().MaxFillsPerNode {
						t.Fatalf("round %d: node %s has %d fills", round, n.ID, fills[n.ID])
					}
					n.Items = append(n.Items, Item{Title: a.Title, Bytes: c.Titles[a.Title].Bytes})
					var used int64
					for _, it := range n.Items {
						used += it.Bytes
					}
					if used > n.DiskBytes {
						t.Fatalf("round %d: node %s over its disk: %d > %d", round, n.ID, used, n.DiskBytes)
					}
				}
			}
			if prefetches > max(c.OriginFree, 0) {
				t.Fatalf("round %d: %d prefetches with %d free channels", round, prefetches, c.OriginFree)
			}
		}
	}
}

func TestChooseNode(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(3, 2)
	c.node("n0").Items = []Item{{Title: "t00", Bytes: 1 << 30}}
	c.node("n1").Utilization = 0.9
	c.node("n2").DiskBytes = 1 << 30
	c.node("n2").Items = []Item{{Title: "busy", Bytes: 1 << 30, InUse: true}}
	got, err := r.ChooseNode("t00", &c.view, offPeak)
	if err != nil || got != "n1" {
		t.Fatalf("ChooseNode = %q, %v; want n1 (n0 has it, n2 is full of a title in use)", got, err)
	}
	got, _ = r.ChooseNode("t01", &c.view, offPeak)
	if got != "n0" {
		t.Fatalf("ChooseNode(t01) = %q, want the least loaded n0", got)
	}
	if _, err := r.ChooseNode("nope", &c.view, offPeak); !errors.Is(err, ErrUnknownTitle) {
		t.Fatal(err)
	}
	c.node("n1").Alive = false
	if _, err := r.ChooseNode("t00", &c.view, offPeak); !errors.Is(err, ErrNoRoom) {
		t.Fatal(err)
	}
}

func TestShifted(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 0)
	if r.Shifted(offPeak) {
		t.Fatal("shift with no requests")
	}
	for i := range 40 {
		r.Observe(fmt.Sprint("a", i), offPeak)
	}
	if !r.Shifted(offPeak) {
		t.Fatal("no shift before the first plan")
	}
	r.Plan(offPeak, &c.view)
	if r.Shifted(offPeak) {
		t.Fatal("shift right after a plan")
	}
	now := offPeak.Add(time.Minute)
	for i := range 5 { // a few new favourites: less than a quarter
		for range 10 {
			r.Observe(fmt.Sprint("b", i), now)
		}
	}
	if r.Shifted(now) {
		t.Fatal("5 new titles of 32 counted as a shift")
	}
	for i := range 10 {
		for range 10 {
			r.Observe(fmt.Sprint("c", i), now)
		}
	}
	if !r.Shifted(now) {
		t.Fatal("15 new titles of 32 not counted as a shift")
	}
}

// BenchmarkPlan measures one Plan over a warm cluster: 20 nodes and 5,000
// titles (the simulator's default), and 100 nodes and 100,000 titles;
// then those 100 nodes at 4 sites, with 70% of each title's viewers at
// one site and the rest spread over all four.
func BenchmarkPlan(b *testing.B) {
	for _, sz := range []struct{ nodes, titles, sites int }{{20, 5_000, 0}, {100, 100_000, 0}, {100, 100_000, 4}} {
		name := fmt.Sprintf("nodes=%d/titles=%d", sz.nodes, sz.titles)
		if sz.sites > 0 {
			name = fmt.Sprintf("sites=%d/", sz.sites) + name
		}
		b.Run(name, func(b *testing.B) {
			r, _ := NewReplicator(ReplicatorConfig{}, nil)
			c := &ClusterView{Titles: map[string]TitleInfo{}, OriginFree: 8}
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range sz.titles {
				id := fmt.Sprintf("t%06d", i)
				c.Titles[id] = TitleInfo{ID: id, Bytes: (1 + rng.Int64N(8)) << 30, Bitrate: 4e6, Duration: 3000}
			}
			for i := range sz.nodes {
				c.Nodes = append(c.Nodes, NodeView{ID: fmt.Sprintf("n%03d", i), Alive: true, DiskBytes: int64(sz.titles) << 30 / int64(sz.nodes) / 2, EgressBps: 10e9})
				if sz.sites > 0 {
					c.Nodes[i].Site = fmt.Sprint("s", i%sz.sites)
				}
			}
			now := offPeak
			for range 20 * sz.titles {
				i := int(float64(sz.titles) * rng.Float64() * rng.Float64() * rng.Float64())
				if sz.sites == 0 {
					r.Observe(fmt.Sprintf("t%06d", i), now)
					continue
				}
				site := i % sz.sites
				if rng.Float64() >= 0.7 {
					site = rng.IntN(sz.sites)
				}
				r.ObserveSite(fmt.Sprintf("t%06d", i), fmt.Sprint("s", site), now)
			}
			apply := func(acts []Action) {
				for _, a := range acts {
					for i := range c.Nodes {
						n := &c.Nodes[i]
						if n.ID != a.Node {
							continue
						}
						if a.Kind == Prefetch {
							n.Items = append(n.Items, Item{Title: a.Title, Bytes: c.Titles[a.Title].Bytes})
						} else {
							for j := range n.Items {
								if n.Items[j].Title == a.Title {
									n.Items = append(n.Items[:j], n.Items[j+1:]...)
									break
								}
							}
						}
					}
				}
			}
			for range 30 {
				now = now.Add(time.Minute)
				apply(r.Plan(now, c))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				now = now.Add(time.Minute)
				apply(r.Plan(now, c))
			}
		})
	}
}

// The shift check's pass that skips records without decaying them
// (shiftTop) names the same titles in the same order as the pass that
// decays every record (topTitles), on trackers whose records were last
// touched at different times, with ties and with fewer titles than
// shiftK.
func TestShiftTopIsTopTitles(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		a, _ := NewReplicator(ReplicatorConfig{}, nil)
		b, _ := NewReplicator(ReplicatorConfig{}, nil)
		now := offPeak
		titles := 10 + rng.IntN(3000)
		for range 5 * titles {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			id := fmt.Sprintf("t%05d", int(float64(titles)*rng.Float64()*rng.Float64()))
			a.Observe(id, now)
			b.Observe(id, now)
		}
		for _, later := range []time.Duration{0, time.Second, 90 * time.Minute} {
			at := now.Add(later)
			got, want := a.shiftTop(at), b.topTitles(at)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, %v later: shiftTop %v, topTitles %v", seed, later, got, want)
			}
		}
	}
}

// BenchmarkShifted measures the shift check the manager makes every
// second (acm.DefaultShiftCheck): a pass over the demand tracker's
// 100,000 titles for its 32 most requested.
func BenchmarkShifted(b *testing.B) {
	r, _ := NewReplicator(ReplicatorConfig{}, nil)
	rng := rand.New(rand.NewPCG(1, 1))
	now := offPeak
	for range 2_000_000 {
		r.Observe(fmt.Sprintf("t%06d", int(1e5*rng.Float64()*rng.Float64()*rng.Float64())), now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now = now.Add(time.Second)
		r.Shifted(now)
	}
}

// TestPopularityPersistence: a restarted Replicator restored from a
// snapshot prefetches the hottest titles at its first Plan, as the one
// that took the snapshot would.
func TestPopularityPersistence(t *testing.T) {
	a := newRep(t, ReplicatorConfig{})
	if err := a.Seed("t00", 1, offPeak); err != nil {
		t.Fatal(err)
	}
	if err := a.Seed("", 1, offPeak); err == nil {
		t.Fatal("empty title seeded")
	}
	for range 50 {
		a.Observe("t01", offPeak)
	}
	state := a.SnapshotPopularity(offPeak)
	b := newRep(t, ReplicatorConfig{})
	if err := b.RestorePopularity(state); err != nil {
		t.Fatal(err)
	}
	ca, cb := newCluster(2, 3), newCluster(2, 3)
	pa, pb := a.Plan(offPeak, &ca.view), b.Plan(offPeak, &cb.view)
	if len(pa) != 2 || !slices.Equal(pa, pb) {
		t.Fatalf("plans differ or miss the hot titles:\n%v\n%v", pa, pb)
	}
	bad := state
	bad.Rank = append(bad.Rank, PopularityEntry{Title: "x", Weight: -1})
	c := newRep(t, ReplicatorConfig{})
	if err := c.RestorePopularity(bad); err == nil || c.Popularity().Len() != 0 {
		t.Fatal("bad state accepted or half loaded")
	}
}
