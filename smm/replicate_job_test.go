package smm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestPlanJobIsPlanThenCalls is a property test of the split Plan: a
// Replicator planning with StartPlan, Run (in another goroutine, while
// the Replicator is used: reads, and calls that change its state) and
// FinishPlan ends in exactly the state of one that ran Plan at StartPlan
// and then took the same calls, with the same orders; during the job its
// reads answer from the state before the plan; an aborted job leaves the
// state of one that never planned. Under the race detector it also shows
// that Run shares nothing with the Replicator in use.
func TestPlanJobIsPlanThenCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	acts, calls, aborts := 0, 0, 0
	for round := range 30 {
		pinsA, pinsB := &Pins{}, &Pins{}
		cfg := ReplicatorConfig{MaxFillsPerNode: 1 + rng.IntN(3), OffPeak: Window{Start: 0, End: 24 * time.Hour}}
		a, err := NewReplicator(cfg, pinsA)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewReplicator(cfg, pinsB)
		nTitles := 5 + rng.IntN(60)
		title := func() string { return fmt.Sprintf("t%03d", rng.IntN(nTitles)) }
		c := &ClusterView{Titles: map[string]TitleInfo{}}
		for i := range nTitles {
			id := fmt.Sprintf("t%03d", i)
			c.Titles[id] = TitleInfo{ID: id, Bytes: (1 + rng.Int64N(8)) << 30, Bitrate: 2e6 + rng.Int64N(14e6), Duration: 600 + rng.Float64()*6000}
		}
		for i := range 1 + rng.IntN(6) {
			c.Nodes = append(c.Nodes, NodeView{ID: fmt.Sprintf("n%d", i), Alive: rng.IntN(6) > 0,
				DiskBytes: (4 + rng.Int64N(20)) << 30, EgressBps: (1 + rng.Int64N(10)) * 1e9})
		}
		node := func() string { return c.Nodes[rng.IntN(len(c.Nodes))].ID }
		now := time.Date(2027, 3, 1, rng.IntN(24), 0, 0, 0, time.UTC)
		for step := range 10 {
			now = now.Add(time.Duration(1+rng.IntN(600)) * time.Second)
			for range rng.IntN(300) {
				id := fmt.Sprintf("t%03d", int(float64(nTitles)*rng.Float64()*rng.Float64()))
				a.Observe(id, now)
				b.Observe(id, now)
			}
			c.OriginFree = rng.IntN(6)
			for i := range c.Nodes {
				for j := range c.Nodes[i].Items {
					c.Nodes[i].Items[j].InUse = rng.IntN(4) == 0
				}
			}
			// The calls made while b plans, on a after its Plan.
			var todo []func(r *Replicator, p *Pins)
			for range rng.IntN(12) {
				n, id := node(), title()
				switch rng.IntN(9) {
				case 0:
					todo = append(todo, func(r *Replicator, _ *Pins) { r.Observe(id, now) })
				case 1:
					w := rng.Float64() * 3000
					todo = append(todo, func(r *Replicator, _ *Pins) { r.SessionEnded(id, w, 3000, now) })
				case 2:
					todo = append(todo, func(r *Replicator, _ *Pins) { r.FillDone(n, id, now) })
				case 3:
					todo = append(todo, func(r *Replicator, _ *Pins) { r.FillFailed(n, id, now) })
				case 4:
					if rng.IntN(2) == 0 {
						todo = append(todo, func(r *Replicator, _ *Pins) { r.Prefetched(n, id, c.Titles[id].Bytes, now) })
					} else {
						todo = append(todo, func(r *Replicator, _ *Pins) { r.Queued(n, id, c.Titles[id].Bytes, now) })
					}
				case 5:
					todo = append(todo, func(r *Replicator, _ *Pins) { r.Evicted(n, id, now) })
				case 6:
					todo = append(todo, func(r *Replicator, _ *Pins) { r.CancelPrefetch(n, id, false) })
				case 7:
					rate := rng.Float64() / 10
					todo = append(todo, func(r *Replicator, _ *Pins) { _ = r.Seed(id, rate, now) })
				case 8:
					if rng.IntN(2) == 0 {
						todo = append(todo, func(_ *Replicator, p *Pins) { _, _ = p.Pin(n, id) })
					} else {
						todo = append(todo, func(_ *Replicator, p *Pins) { p.Unpin(n, id) })
					}
				}
			}
			calls += len(todo)
			abort := rng.IntN(8) == 0

			j := b.StartPlan(now)
			if !b.Planning() {
				t.Fatal("no job in progress after StartPlan")
			}
			if got, want := readsOf(b, c, now), readsOf(a, c, now); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d step %d: reads during the job differ from those before the plan:\n%+v\n%+v", round, step, got, want)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				j.Run(c)
			}()
			for _, f := range todo {
				f(b, pinsB)
			}
			<-done
			var got, want []Action
			if abort {
				aborts++
				b.AbortPlan(j)
				if b.FinishPlan(j) != nil {
					t.Fatal("an aborted job gave orders")
				}
			} else {
				got = b.FinishPlan(j)
				want = a.Plan(now, c)
			}
			if b.Planning() {
				t.Fatal("job still in progress after FinishPlan")
			}
			for _, f := range todo {
				f(a, pinsA)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d step %d: orders\n%v\nwant %v", round, step, got, want)
			}
			acts += len(got)
			if ga, gb := stateOf(a, c, now), stateOf(b, c, now); !reflect.DeepEqual(ga, gb) {
				t.Fatalf("round %d step %d: state after the job differs from Plan then the calls:\n%+v\n%+v", round, step, gb, ga)
			}
			// The view follows the orders (prefetches complete at once).
			for _, x := range got {
				for i := range c.Nodes {
					n := &c.Nodes[i]
					if n.ID != x.Node {
						continue
					}
					if x.Kind == Prefetch {
						n.Items = append(n.Items, Item{Title: x.Title, Bytes: c.Titles[x.Title].Bytes})
					} else {
						n.Items = slices.DeleteFunc(n.Items, func(it Item) bool { return it.Title == x.Title })
					}
				}
			}
		}
	}
	t.Logf("%d orders, %d calls during jobs, %d aborted jobs", acts, calls, aborts)
	if acts < 50 || calls < 500 || aborts < 10 {
		t.Fatalf("too little exercised: %d orders, %d calls, %d aborts", acts, calls, aborts)
	}
}

// replicatorReads is what a Replicator answers about one cluster.
type replicatorReads struct {
	Value   map[string]float64
	Copies  map[string]int
	Planned map[string]bool
	Fills   []FillStatus
	Holds   []Hold
	Stats   ReplicatorStats
}

func readsOf(r *Replicator, c *ClusterView, now time.Time) replicatorReads {
	x := replicatorReads{Value: map[string]float64{}, Copies: map[string]int{}, Planned: map[string]bool{},
		Fills: r.Fills(), Holds: r.Holds(now), Stats: r.Stats()}
	for id := range c.Titles {
		x.Value[id] = r.Value(id, now)
		for _, n := range c.Nodes {
			x.Copies[n.ID+"/"+id] = r.Copies(n.ID, id)
			x.Planned[n.ID+"/"+id] = r.Planned(n.ID, id)
		}
	}
	return x
}

// replicatorState is a Replicator's whole observable state.
type replicatorState struct {
	replicatorReads
	Popularity PopularityState
	Shifted    bool
	Peak       float64
	At         time.Time
}

func stateOf(r *Replicator, c *ClusterView, now time.Time) replicatorState {
	return replicatorState{replicatorReads: readsOf(r, c, now), Popularity: r.SnapshotPopularity(now), Shifted: r.Shifted(now),
		Peak: r.peak, At: r.at}
}

// TestPlanJobMisuse: a second StartPlan or a Plan during a job is a
// programming error (panics); FinishPlan of a job not run, or of another
// Replicator's job, orders nothing.
func TestPlanJobMisuse(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	seed(t, r, "t00", 1, offPeak)
	c := newCluster(2, 1)
	j := r.StartPlan(offPeak)
	for name, f := range map[string]func(){
		"StartPlan": func() { r.StartPlan(offPeak) },
		"Plan":      func() { r.Plan(offPeak, &c.view) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s during a job did not panic", name)
				}
			}()
			f()
		}()
	}
	other := newRep(t, ReplicatorConfig{})
	if other.FinishPlan(j) != nil || !r.Planning() {
		t.Fatal("another Replicator finished the job")
	}
	if r.FinishPlan(j) != nil || r.Planning() {
		t.Fatal("a job not run gave orders or stayed in progress")
	}
	if got := r.Plan(offPeak, &c.view); len(got) != 1 || got[0].Kind != Prefetch {
		t.Fatalf("plan after the dropped job: %v", got)
	}
	if r.Stats().Plans != 1 {
		t.Fatalf("plans %d: the dropped job counted", r.Stats().Plans)
	}
}

// BenchmarkPlanJobLocked measures the parts of a split plan that run
// under the caller's lock, StartPlan and FinishPlan (no calls between),
// with 100,000 titles tracked; BenchmarkPlan measures the whole Plan.
func BenchmarkPlanJobLocked(b *testing.B) {
	r, _ := NewReplicator(ReplicatorConfig{}, nil)
	c := &ClusterView{Titles: map[string]TitleInfo{}, OriginFree: 8}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 100_000 {
		id := fmt.Sprintf("t%06d", i)
		c.Titles[id] = TitleInfo{ID: id, Bytes: (1 + rng.Int64N(8)) << 30, Bitrate: 4e6, Duration: 3000}
	}
	for i := range 20 {
		c.Nodes = append(c.Nodes, NodeView{ID: fmt.Sprintf("n%03d", i), Alive: true, DiskBytes: 100_000 << 30 / 40, EgressBps: 10e9})
	}
	now := offPeak
	for range 2_000_000 {
		r.Observe(fmt.Sprintf("t%06d", int(1e5*rng.Float64()*rng.Float64()*rng.Float64())), now)
	}
	var locked time.Duration
	for b.Loop() {
		now = now.Add(time.Minute)
		t0 := time.Now()
		j := r.StartPlan(now)
		locked += time.Since(t0)
		j.Run(c)
		t1 := time.Now()
		r.FinishPlan(j)
		locked += time.Since(t1)
	}
	b.ReportMetric(float64(locked)/float64(b.N)/1e6, "locked-ms")
}
