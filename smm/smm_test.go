package smm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func TestLRUNeverEvictsInUse(t *testing.T) {
	items := []Item{
		{Title: "old-playing", Bytes: 100, InUse: true, LastAccess: t0},
		{Title: "old", Bytes: 100, LastAccess: t0.Add(time.Second)},
		{Title: "pinned", Bytes: 100, Pinned: true, LastAccess: t0},
		{Title: "new", Bytes: 100, LastAccess: t0.Add(time.Hour)},
	}
	v, ok := LRU{}.Victims(items, 150, t0)
	if !ok || len(v) != 2 || v[0] != "old" || v[1] != "new" {
		t.Fatalf("victims %v ok=%v", v, ok)
	}
	if _, ok := (LRU{}).Victims(items, 250, t0); ok {
		t.Fatal("claimed to free more than evictable")
	}
}

func TestPopularityDecay(t *testing.T) {
	p := NewPopularity(time.Minute)
	for i := 0; i < 60; i++ {
		p.Observe("a", t0)
	}
	r0 := p.Rate("a", t0)
	r1 := p.Rate("a", t0.Add(time.Minute))
	if math.Abs(r1/r0-0.5) > 1e-9 {
		t.Fatalf("after one half-life %v -> %v", r0, r1)
	}
	if p.Count("a") != 60 || p.Count("b") != 0 {
		t.Fatal("counts")
	}
}

func TestNewEvictorUnknown(t *testing.T) {
	if _, err := NewEvictor("nope"); err == nil {
		t.Fatal("unknown evictor accepted")
	}
}

func TestPopularityDemand(t *testing.T) {
	p := NewPopularity(time.Hour)
	// 3600 requests in one instant: decayed count 3600, rate 3600*ln2/3600 s.
	for range 3600 {
		p.Observe("a", t0)
	}
	r := p.Rate("a", t0)
	if math.Abs(r-math.Ln2) > 1e-9 {
		t.Fatalf("rate %v", r)
	}
	// No session ends yet: half of a 1000 s title at 4 Mbit/s.
	d := p.Demand("a", 4e6, 1000, t0)
	if want := r * 500 * 4e6; math.Abs(d-want) > 1e-3 {
		t.Fatalf("demand %v want %v", d, want)
	}
	// Sessions of other titles teach a cluster-wide fraction (0.2).
	for range 10 {
		p.ObserveSession("b", 200, 1000, t0)
	}
	if m := p.MeanSession("a", 1000, t0); math.Abs(m-200) > 1e-9 {
		t.Fatalf("mean session %v", m)
	}
	// Its own sessions win once there are enough of them.
	for range 5 {
		p.ObserveSession("a", 900, 1000, t0)
	}
	if m := p.MeanSession("a", 1000, t0); math.Abs(m-900) > 1e-9 {
		t.Fatalf("own mean session %v", m)
	}
	p.ObserveSession("a", math.NaN(), 1000, t0)
	p.ObserveSession("a", -1, 1000, t0)
	if m := p.MeanSession("a", 1000, t0); math.Abs(m-900) > 1e-9 {
		t.Fatalf("bad samples changed the mean: %v", m)
	}
	if p.Demand("a", 0, 1000, t0) != 0 || p.Demand("zz", 4e6, 1000, t0) != 0 {
		t.Fatal("demand without bitrate or requests")
	}
}

func TestPopularitySnapshotPruneSeed(t *testing.T) {
	p := NewPopularity(time.Minute)
	p.Observe("a", t0)
	p.Observe("a", t0)
	p.Observe("b", t0)
	snap := p.Snapshot(t0.Add(time.Minute))
	if len(snap) != 2 || snap[0].Title != "a" || math.Abs(snap[0].Weight-1) > 1e-9 || snap[0].Count != 2 {
		t.Fatalf("snapshot %+v", snap)
	}
	q := NewPopularity(time.Minute)
	if err := q.Restore(snap, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if math.Abs(q.Rate("a", t0.Add(time.Minute))-p.Rate("a", t0.Add(time.Minute))) > 1e-12 || q.Count("a") != 2 {
		t.Fatal("restore differs")
	}
	if err := q.Restore([]PopularityEntry{{Title: "x", Weight: -1}}, t0); err == nil {
		t.Fatal("negative weight accepted")
	}
	if n := p.Prune(0.1, t0.Add(10*time.Minute)); n != 2 || p.Len() != 0 {
		t.Fatalf("pruned %d, left %d", n, p.Len())
	}
	if err := p.Seed("c", 0.5, t0); err != nil || math.Abs(p.Rate("c", t0)-0.5) > 1e-12 {
		t.Fatal("seed", err)
	}
	if err := p.Seed("c", math.Inf(1), t0); err == nil {
		t.Fatal("infinite seed accepted")
	}
}

// TestPopularityTitlesStaySorted: Titles, kept up to date incrementally
// across new titles and pruning, is always the sorted set of titles.
func TestPopularityTitlesStaySorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	p := NewPopularity(time.Minute)
	now := time.Unix(0, 0)
	for step := range 3000 {
		now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
		p.Observe(fmt.Sprint("t", rng.IntN(300)), now)
		if step%37 == 0 {
			p.Prune(0.5, now)
		}
		if step%5 == 0 {
			want := make([]string, 0, p.Len())
			for k, i := range p.index {
				if p.entries[i].title != k {
					t.Fatalf("step %d: index says %q at %d, entry is %q", step, k, i, p.entries[i].title)
				}
				want = append(want, k)
			}
			if len(want) != len(p.entries) {
				t.Fatalf("step %d: %d indexed, %d entries", step, len(want), len(p.entries))
			}
			slices.Sort(want)
			if got := p.Titles(); !slices.Equal(got, want) {
				t.Fatalf("step %d: %d titles listed, %d known", step, len(got), len(want))
			}
		}
	}
}
