package bound

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// optResidency is the exact optimum under the residency rule by dynamic
// programming over cache contents (at most 8 titles): between two
// consecutive session endpoints the content is one set that holds every
// title with a session in progress and fits; each title entering the set
// costs its bytes (byBytes) or one fetch. Warm titles start cached. It
// returns +Inf when no schedule exists.
func optResidency(reqs []Request, capacity int64, byBytes bool, warm []string) float64 {
	ids := map[string]int{}
	var size []int64
	for _, r := range reqs {
		if _, ok := ids[r.Title]; !ok {
			ids[r.Title] = len(size)
			size = append(size, r.Bytes)
		}
	}
	var times []float64
	for _, r := range reqs {
		times = append(times, r.Time, r.End)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	full := 1 << len(size)
	bytes := make([]int64, full)
	for m := range full {
		for o := range size {
			if m&(1<<o) != 0 {
				bytes[m] += size[o]
			}
		}
	}
	inf := math.Inf(1)
	cost := make([]float64, full)
	for m := range cost {
		cost[m] = inf
	}
	start := 0
	for _, w := range warm {
		if o, ok := ids[w]; ok {
			start |= 1 << o
		}
	}
	cost[start] = 0
	for j := 0; j+1 < len(times); j++ {
		need := 0 // titles in use over [times[j], times[j+1])
		for _, r := range reqs {
			if r.Time <= times[j] && r.End >= times[j+1] {
				need |= 1 << ids[r.Title]
			}
		}
		next := make([]float64, full)
		for s := range next {
			next[s] = inf
			if s&need != need || bytes[s] > capacity {
				continue
			}
			for p, v := range cost {
				if v == inf {
					continue
				}
				enter := s &^ p
				c := v
				for o := range size {
					if enter&(1<<o) != 0 {
						if byBytes {
							c += float64(size[o])
						} else {
							c++
						}
					}
				}
				next[s] = math.Min(next[s], c)
			}
		}
		cost = next
	}
	return slices.Min(cost)
}

// randomSessions draws n sessions of positive length over titles.
func randomSessions(rng *rand.Rand, n, titles int, size []int64) []Request {
	reqs := make([]Request, n)
	tm := 0.0
	for i := range reqs {
		o := rng.IntN(titles)
		tm += math.Round(rng.ExpFloat64()*4) / 2 // ties happen
		reqs[i] = Request{Time: tm, Title: fmt.Sprint("t", o), Bytes: size[o], End: tm + 0.5 + math.Round(rng.ExpFloat64()*6)/2}
	}
	return reqs
}

// TestResidencyHandChecked: B plays over [0, 5) while C plays over
// [2, 3) in a cache of two titles, so A (played at 0 and again at 4)
// cannot stay in between: four fetches where the instant model, which
// would keep A and B and stream C through, needs three.
func TestResidencyHandChecked(t *testing.T) {
	reqs := []Request{
		{Time: 0, End: 1, Title: "A", Bytes: 10},
		{Time: 0, End: 5, Title: "B", Bytes: 10},
		{Time: 2, End: 3, Title: "C", Bytes: 10},
		{Time: 4, End: 4.5, Title: "A", Bytes: 10},
	}
	r, err := Residency(reqs, 20, Options{})
	if err != nil || r.OriginBytes != 40 || r.Fetches != 4 || r.UpperBytes != 40 || r.PeakInUseBytes != 20 || r.BusyBytes != 40 {
		t.Fatalf("residency %+v %v", r, err)
	}
	if i, _ := Compute(reqs, 20, Options{}); i.OriginBytes != 30 {
		t.Fatalf("instant %+v", i)
	}
	// A longer cache keeps A: three fetches.
	if r, _ := Residency(reqs, 30, Options{}); r.OriginBytes != 30 || r.Fetches != 3 {
		t.Fatalf("30 bytes: %+v", r)
	}
	// Overlapping sessions of one title share one copy.
	both := []Request{{Time: 0, End: 10, Title: "A", Bytes: 10}, {Time: 5, End: 15, Title: "A", Bytes: 10}, {Time: 15, End: 16, Title: "A", Bytes: 10}}
	r, err = Residency(both, 10, Options{})
	if err != nil || r.OriginBytes != 10 || r.TotalBytes != 30 || r.BusyBytes != 10 || r.CompulsoryFetches != 1 {
		t.Fatalf("shared copy %+v %v", r, err)
	}
	// A warm title needs no fetch for its first session.
	r, _ = Residency(reqs, 20, Options{Warm: []Request{{Title: "B", Bytes: 10}}})
	if r.OriginBytes != 30 || r.CompulsoryFetches != 2 {
		t.Fatalf("warm %+v", r)
	}
}

func TestResidencyErrors(t *testing.T) {
	over := []Request{{Time: 0, End: 10, Title: "A", Bytes: 10}, {Time: 5, End: 15, Title: "B", Bytes: 10}}
	if _, err := Residency(over, 15, Options{}); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("two titles in use in a cache of one and a half: %v", err)
	}
	if _, err := Residency(over, 20, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, reqs := range [][]Request{
		{{Time: 5, End: 4, Title: "A", Bytes: 1}},
		{{Time: 5, End: math.Inf(1), Title: "A", Bytes: 1}},
		{{Time: 5, End: 6, Title: "", Bytes: 1}},
		{{Time: 5, End: 6, Title: "A", Bytes: -1}},
		{{Time: 5, End: 6, Title: "A", Bytes: 1}, {Time: 4, End: 6, Title: "A", Bytes: 1}},
	} {
		if _, err := Residency(reqs, 10, Options{}); !errors.Is(err, ErrBadTrace) {
			t.Fatalf("%v: %v", reqs, err)
		}
	}
	if _, err := Residency(nil, -1, Options{}); !errors.Is(err, ErrBadTrace) {
		t.Fatal("negative capacity")
	}
	if r, err := Residency(nil, 10, Options{}); err != nil || r.OriginBytes != 0 {
		t.Fatalf("empty: %+v %v", r, err)
	}
}

// TestResidencyBelowExactOptimum: on random small traces of sessions the
// bound never exceeds the exact optimum under the residency rule (bytes
// and fetches), the feasible schedules never beat it, PFOO-L lies below
// the tightened bound, and an infeasible trace is reported as such.
func TestResidencyBelowExactOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	rounds, infeasible := 500, 0
	if testing.Short() {
		rounds = 150
	}
	for round := range rounds {
		titles := 2 + rng.IntN(5)
		size := make([]int64, titles)
		for i := range size {
			size[i] = 1 + rng.Int64N(100)
			if round%4 == 0 {
				size[i] = 40
			}
		}
		reqs := randomSessions(rng, 3+rng.IntN(9), titles, size)
		var warm []Request
		var warmIDs []string
		anyWarm := round%7 == 3 && round%5 != 0
		switch {
		case round%5 == 0:
			warm = []Request{reqs[0]}
			warmIDs = []string{reqs[0].Title}
		case anyWarm: // any start the schedule likes: all titles, dropped at once if need be
			for _, r := range reqs {
				warmIDs = append(warmIDs, r.Title)
			}
		}
		capacity := rng.Int64N(300)
		ob := optResidency(reqs, capacity, true, warmIDs)
		of := optResidency(reqs, capacity, false, warmIDs)
		r, err := Residency(reqs, capacity, Options{Warm: warm, AnyWarm: anyWarm})
		if math.IsInf(ob, 1) {
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("round %d: no schedule exists, got %+v %v", round, r, err)
			}
			infeasible++
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v (optimum %v) for %v cap %d", round, err, ob, reqs, capacity)
		}
		if float64(r.OriginBytes) > ob || float64(r.Fetches) > of {
			t.Fatalf("round %d: bound %d B / %d fetches above the optimum %v / %v for %v cap %d", round, r.OriginBytes, r.Fetches, ob, of, reqs, capacity)
		}
		if float64(r.UpperBytes) < ob || float64(r.UpperFetches) < of || float64(r.StaticBytes) < ob {
			t.Fatalf("round %d: feasible schedules below the optimum: upper %d/%d static %d, optimum %v/%v; %+v %v cap %d warm %v", round, r.UpperBytes, r.UpperFetches, r.StaticBytes, ob, of, r, reqs, capacity, warmIDs)
		}
		if r.PFOOLBytes > r.OriginBytes || r.OriginBytes < r.CompulsoryBytes || r.OriginBytes > r.BusyBytes {
			t.Fatalf("round %d: %+v", round, r)
		}
		// The instant model asks less of a schedule: its exact optimum is
		// never above the residency optimum.
		if oi := opt(reqs, capacity, true); oi > ob && len(warmIDs) == 0 {
			t.Fatalf("round %d: instant optimum %v above residency optimum %v", round, oi, ob)
		}
	}
	if infeasible == 0 || infeasible > rounds/2 {
		t.Fatalf("%d infeasible traces of %d: the test does not cover both cases", infeasible, rounds)
	}
}

// TestResidencyMonotone: more cache never raises the bound; instants
// (End = 0) give a bound no higher than the instant model's exact optimum.
func TestResidencyMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	size := make([]int64, 150)
	for i := range size {
		size[i] = int64(1+i%13) << 20
	}
	reqs := randomSessions(rng, 3000, len(size), size)
	prev := int64(math.MaxInt64)
	for c := int64(200) << 20; c <= 2000<<20; c += 100 << 20 {
		r, err := Residency(reqs, c, Options{})
		if errors.Is(err, ErrInfeasible) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.OriginBytes > prev || r.OriginBytes > r.UpperBytes || r.PFOOLBytes > r.OriginBytes {
			t.Fatalf("cap %d: %+v after %d", c, r, prev)
		}
		prev = r.OriginBytes
	}
	if prev == math.MaxInt64 {
		t.Fatal("every capacity infeasible")
	}
	for round := range 100 {
		n := 3 + rng.IntN(10)
		sz := []int64{5, 17, 30, 44, 9, 60}
		inst := randomTrace(rng, n, 2+rng.IntN(4), func(o int) int64 { return sz[o] })
		capacity := rng.Int64N(150)
		r, err := Residency(inst, capacity, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if float64(r.OriginBytes) > opt(inst, capacity, true) {
			t.Fatalf("round %d: instants: %d above the optimum %v", round, r.OriginBytes, opt(inst, capacity, true))
		}
	}
}

func BenchmarkResidency1M(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := zipfTrace(1_000_000, 100_000, 0.8, 1)
	for i := range reqs {
		reqs[i].End = reqs[i].Time + 60*rng.ExpFloat64()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := Residency(reqs, 20_000<<30, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
