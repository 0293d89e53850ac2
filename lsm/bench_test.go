package lsm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// benchScheduler builds nodes of 10 Gbit/s at about half load, 100,000
// titles each held by one node, and a Zipf(0.9) stream of 4 Mbit/s
// requests from 200,000 subscribers.
func benchScheduler(b *testing.B, policy string, nodes int) (*Scheduler, []Request) {
	const titles = 100_000
	cfg := DefaultConfig()
	cfg.Policy = policy
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("n%04d", i)
		if _, err := s.AddNode(NodeSpec{ID: id, Capacity: Capacity{EgressBps: 10e9, DiskBytes: 1e15}}, t0); err != nil {
			b.Fatal(err)
		}
		// Background load: 40..60% of the node, on a title of its own.
		if _, err := s.Reserve(id, "bg-"+id, int64(4e9+rng.Float64()*2e9)); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, titles)
	for t := range names {
		names[t] = fmt.Sprintf("title-%06d", t)
		s.SetReplica(fmt.Sprintf("n%04d", t%nodes), names[t], false, 4e9)
	}
	cum := make([]float64, titles)
	sum := 0.0
	for k := range cum {
		sum += math.Pow(float64(k+1), -0.9)
		cum[k] = sum
	}
	reqs := make([]Request, 1<<16)
	for i := range reqs {
		x := rng.Float64() * sum
		lo, hi := 0, titles-1
		for lo < hi {
			m := (lo + hi) / 2
			if cum[m] < x {
				lo = m + 1
			} else {
				hi = m
			}
		}
		reqs[i] = Request{Title: names[lo], Client: fmt.Sprintf("sub-%d", rng.IntN(200_000)), Bitrate: 4e6, Bytes: 4e9}
	}
	// Warm up: stateful policies see every request once.
	for i := range reqs {
		r := reqs[i]
		if res, err := s.Place(&r, t0); err == nil {
			s.Release(res)
		}
	}
	return s, reqs
}

// BenchmarkDecision measures one admission decision (Place: the policy's
// pick and the reservation) followed by its Release, per policy and
// cluster size, with 100,000 titles.
func BenchmarkDecision(b *testing.B) {
	for _, p := range Policies() {
		for _, nodes := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/nodes=%d", p, nodes), func(b *testing.B) {
				s, reqs := benchScheduler(b, p, nodes)
				r := new(Request) // one request record, as a queued ticket holds it
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					*r = reqs[i&(len(reqs)-1)] // hashes not cached: computed in the decision
					res, err := s.Place(r, t0)
					if err != nil {
						b.Fatal(err)
					}
					s.Release(res)
				}
			})
		}
	}
}
