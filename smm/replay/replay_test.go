package replay

import (
	"testing"

	"vodcluster/smm"
	"vodcluster/smm/bound"
)

func TestRunHandChecked(t *testing.T) {
	reqs := []bound.Request{{Time: 0, Title: "a", Bytes: 10}, {Time: 1, Title: "b", Bytes: 10}, {Time: 2, Title: "a", Bytes: 10}, {Time: 3, Title: "c", Bytes: 10}, {Time: 4, Title: "b", Bytes: 10}, {Time: 5, Title: "a", Bytes: 10}, {Time: 6, Title: "z", Bytes: 100}}
	// LRU with room for two: a b a(hit) c(evicts b) b(evicts a) a(evicts c) z(too big).
	r, err := Run(reqs, 20, smm.LRU{})
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Policy: "lru", Requests: 7, Hits: 1, Fetches: 6, OriginBytes: 150, Evictions: 3, Bypassed: 1}
	if r != want {
		t.Fatalf("got %+v\nwant %+v", r, want)
	}
	// LFU keeps a (two hits): a b a c(evicts b) b(evicts c) a(hit) z.
	r, _ = Run(reqs, 20, smm.LFU{})
	if r.Hits != 2 || r.Evictions != 2 {
		t.Fatalf("lfu %+v", r)
	}
	if _, err := Run([]bound.Request{{Time: 1, Title: "a", Bytes: 1}, {Time: 0, Title: "a", Bytes: 1}}, 10, smm.LRU{}); err == nil {
		t.Fatal("time going back accepted")
	}
	if _, err := Run(nil, -1, smm.LRU{}); err == nil {
		t.Fatal("negative capacity accepted")
	}
}

// TestPoliciesAgainstBound is the offline replay: every policy runs as one
// cache over Zipf traces with titles from 0.5 to 8 GB, with and without
// drift; none may beat the bound, and beyond the compulsory fetches gdsf
// must fetch clearly fewer bytes than lru.
func TestPoliciesAgainstBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		syn   Synthetic
		share float64 // cache size as a share of the catalog's bytes
	}{
		{"zipf0.8-10%", Synthetic{Requests: 10_000, Titles: 1_000, Alpha: 0.8, MinBytes: 500 << 20, MaxBytes: 8 << 30, Seed: 1}, 0.10},
		{"zipf0.8-30%", Synthetic{Requests: 10_000, Titles: 1_000, Alpha: 0.8, MinBytes: 500 << 20, MaxBytes: 8 << 30, Seed: 2}, 0.30},
		{"zipf1.0-drift", Synthetic{Requests: 10_000, Titles: 1_000, Alpha: 1.0, MinBytes: 500 << 20, MaxBytes: 8 << 30, Drift: 0.02, DriftEvery: 1_000, Seed: 3}, 0.20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs, err := tc.syn.Trace()
			if err != nil {
				t.Fatal(err)
			}
			catalog := map[string]int64{}
			for _, r := range reqs {
				catalog[r.Title] = r.Bytes
			}
			var all int64
			for _, b := range catalog {
				all += b
			}
			capacity := int64(tc.share * float64(all))
			lb, err := bound.Compute(reqs, capacity, bound.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Result{}
			for _, name := range smm.Evictors() {
				ev, _ := smm.NewEvictor(name)
				r, err := Run(reqs, capacity, ev)
				if err != nil {
					t.Fatal(err)
				}
				got[name] = r
				t.Logf("%-10s origin %7.1f GB  ratio to bound %.3f  hits %d", name, float64(r.OriginBytes)/1e9, float64(r.OriginBytes)/float64(lb.OriginBytes), r.Hits)
				if r.OriginBytes < lb.OriginBytes || r.Fetches < lb.Fetches {
					t.Errorf("%s beats the bound: %+v vs %+v", name, r, lb)
				}
			}
			t.Logf("bound %s: %.1f GB (compulsory %.1f GB, no cache %.1f GB)", lb.Method, float64(lb.OriginBytes)/1e9, float64(lb.CompulsoryBytes)/1e9, float64(lb.TotalBytes)/1e9)
			// Compulsory fetches are the same for all; compare the rest.
			g, l := got["gdsf"].OriginBytes-lb.CompulsoryBytes, got["lru"].OriginBytes-lb.CompulsoryBytes
			if float64(g) > 0.9*float64(l) {
				t.Errorf("gdsf fetched %d bytes beyond the compulsory ones, not clearly under lru's %d", g, l)
			}
		})
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	s := Synthetic{Requests: 1000, Titles: 50, Alpha: 0.9, MinBytes: 1, MaxBytes: 100, Drift: 0.1, Seed: 42}
	a, err := s.Trace()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Trace()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d differs", i)
		}
	}
	if _, err := (Synthetic{Titles: 0, MinBytes: 1, MaxBytes: 1}).Trace(); err == nil {
		t.Fatal("no titles accepted")
	}
}
