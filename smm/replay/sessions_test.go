package replay

import (
	"errors"
	"math/rand/v2"
	"testing"

	"vodcluster/smm"
	"vodcluster/smm/bound"
)

// TestRunSessionsHandChecked: a playing title is never evicted. B plays
// over [0, 5); with room for two titles, C at 2 evicts A (not playing),
// not B; A at 4 is fetched again and evicts C (its session over).
func TestRunSessionsHandChecked(t *testing.T) {
	reqs := []bound.Request{
		{Time: 0, End: 1, Title: "A", Bytes: 10},
		{Time: 0.5, End: 5, Title: "B", Bytes: 10},
		{Time: 2, End: 3, Title: "C", Bytes: 10},
		{Time: 4, End: 4.5, Title: "A", Bytes: 10},
		{Time: 4.6, End: 6, Title: "B", Bytes: 10},
	}
	r, err := RunSessions(reqs, 20, smm.LRU{})
	want := Result{Policy: "lru", Requests: 5, Hits: 1, Fetches: 4, OriginBytes: 40, Evictions: 2}
	if err != nil || r != want {
		t.Fatalf("got %+v %v\nwant %+v", r, err, want)
	}
	// Plain LRU without the rule would evict B (least recently used at 2).
	if r, _ := Run(reqs, 20, smm.LRU{}); r.Fetches != 5 {
		t.Fatalf("instants: %+v", r)
	}
	// Two titles playing at once in a cache of one: no room.
	over := []bound.Request{{Time: 0, End: 10, Title: "A", Bytes: 10}, {Time: 1, End: 10, Title: "B", Bytes: 10}}
	if _, err := RunSessions(over, 15, smm.LRU{}); err == nil {
		t.Fatal("room made beside titles in use")
	}
	if _, err := RunSessions([]bound.Request{{Time: 1, End: 0.5, Title: "A", Bytes: 1}}, 10, smm.LRU{}); err == nil {
		t.Fatal("end before time accepted")
	}
	if _, err := RunSessions(nil, -1, smm.LRU{}); err == nil {
		t.Fatal("negative capacity accepted")
	}
}

// TestRunSessionsNeverBelowBound: on random session traces no policy, the
// oracle included, fetches less than the residency bound, and on instants
// RunSessions is Run.
func TestRunSessionsNeverBelowBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for round := range 40 {
		syn := Synthetic{Requests: 2000, Titles: 200, Alpha: 0.9, MinBytes: 1 << 20, MaxBytes: 16 << 20, Seed: uint64(round)}
		reqs, err := syn.Trace()
		if err != nil {
			t.Fatal(err)
		}
		inst := append([]bound.Request(nil), reqs...)
		for i := range reqs {
			reqs[i].End = reqs[i].Time + rng.ExpFloat64()*float64(1+round%5)
		}
		capacity := int64(300+rng.IntN(1500)) << 20
		b, err := bound.Residency(reqs, capacity, bound.Options{})
		if errors.Is(err, bound.ErrInfeasible) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range append(smm.Evictors(), "oracle") {
			ev, _ := smm.NewEvictor(name)
			if name == "oracle" {
				ev = Oracle(reqs)
			}
			r, err := RunSessions(reqs, capacity, ev)
			if err != nil {
				t.Fatalf("round %d %s: %v", round, name, err)
			}
			if r.OriginBytes < b.OriginBytes {
				t.Fatalf("round %d %s: %d bytes below the bound %d", round, name, r.OriginBytes, b.OriginBytes)
			}
		}
		a, _ := Run(inst, capacity, smm.LRU{})
		s, _ := RunSessions(inst, capacity, smm.LRU{})
		if a != s {
			t.Fatalf("round %d: instants %+v vs %+v", round, a, s)
		}
	}
}
