package lsm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// zipfTitles returns a sampler of title indexes in [0, titles) with
// Zipf(alpha) popularity, rank k = index k.
func zipfTitles(titles int, alpha float64) func(*rand.Rand) int {
	cum := make([]float64, titles)
	sum := 0.0
	for k := range cum {
		sum += math.Pow(float64(k+1), -alpha)
		cum[k] = sum
	}
	return func(rng *rand.Rand) int {
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
		return lo
	}
}

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
	pick := zipfTitles(titles, 0.9)
	reqs := make([]Request, 1<<16)
	for i := range reqs {
		reqs[i] = Request{Title: names[pick(rng)], Client: fmt.Sprintf("sub-%d", rng.IntN(200_000)), Bitrate: 4e6, Bytes: 4e9}
	}
	warm(b, s, reqs)
	return s, reqs
}

// warm decides every request once, so stateful policies have their
// tables, and returns the scheduler to its state.
func warm(b *testing.B, s *Scheduler, reqs []Request) {
	for i := range reqs {
		r := reqs[i]
		if res, err := s.Place(&r, t0); err == nil {
			undo(s, res)
		}
	}
	if an := s.Anomalies(); an.UnbalancedReleases != 0 {
		b.Fatalf("anomalies %+v", an)
	}
}

// undo releases a placement and drops the replica it made, so the
// scheduler's state is what it was before it: a benchmark loop is
// stationary.
func undo(s *Scheduler, res Reservation) {
	s.Release(res)
	if res.Fill {
		s.DropReplica(res.NodeID, res.Title)
	}
}

// decide runs b.N decisions over reqs.
func decide(b *testing.B, s *Scheduler, reqs []Request, mayRefuse bool) {
	r := new(Request) // one request record, as a queued ticket holds it
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		*r = reqs[i&(len(reqs)-1)] // hashes not cached: computed in the decision
		res, err := s.Place(r, t0)
		if err != nil {
			if mayRefuse {
				continue
			}
			b.Fatal(err)
		}
		undo(s, res)
	}
}

// BenchmarkDecision measures one admission decision (Place: the policy's
// pick and the reservation) followed by its Release (and the drop of the
// replica it made, if any: every iteration leaves the state as it found
// it), per policy and cluster size, with 100,000 titles.
func BenchmarkDecision(b *testing.B) {
	for _, p := range Policies() {
		for _, nodes := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("%s/nodes=%d", p, nodes), func(b *testing.B) {
				s, reqs := benchScheduler(b, p, nodes)
				decide(b, s, reqs, false)
			})
		}
	}
}

// loadedScheduler is the default policy's state at an evening peak:
// 100,000 titles (45% at 4, 45% at 8, 10% at 16 Mbit/s), each on one
// node and the 500 most popular on 2-6 nodes; nodes of 1.5 to 8 Gbit/s at
// 70-98% of their egress, a tenth of them measured above the overload
// threshold; disks that hold their titles with 0 to 3 titles' worth of
// room beside the titles in use, a third with none; requests Zipf(0.9).
func loadedScheduler(b *testing.B, nodes int) (*Scheduler, []Request) {
	const titles = 100_000
	s, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	names := make([]string, titles)
	rate := make([]int64, titles)
	size := make([]int64, titles)
	for t := range names {
		names[t] = fmt.Sprintf("title-%06d", t)
		switch x := rng.Float64(); {
		case x < 0.45:
			rate[t] = 4e6
		case x < 0.9:
			rate[t] = 8e6
		default:
			rate[t] = 16e6
		}
		size[t] = rate[t] / 8 * int64(1800+rng.IntN(7200))
	}
	ids := make([]string, nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%04d", i)
		egress := []int64{8e9, 3e9, 1.5e9}[i%3]
		if _, err := s.AddNode(NodeSpec{ID: ids[i], Capacity: Capacity{EgressBps: egress, DiskBytes: 1e18}}, t0); err != nil {
			b.Fatal(err)
		}
	}
	held := make([][]int, nodes)
	for t := range names {
		i := t % nodes
		s.SetReplica(ids[i], names[t], false, size[t])
		held[i] = append(held[i], t)
		if t < 500 {
			for k := rng.IntN(5); k > 0; k-- {
				j := rng.IntN(nodes)
				if _, ok := s.Nodes[j].Holds(names[t]); !ok {
					s.SetReplica(ids[j], names[t], false, size[t])
					held[j] = append(held[j], t)
				}
			}
		}
	}
	for i, n := range s.Nodes {
		// Sessions on the node's own titles up to 70-98% of its egress:
		// those titles are in use.
		target := int64(float64(n.Capacity.EgressBps) * (0.7 + 0.28*rng.Float64()))
		for k := 0; n.ReservedBps < target; k++ {
			t := held[i][k%len(held[i])]
			s.Reserve(ids[i], names[t], min(rate[t], target-n.ReservedBps))
		}
		room := int64(0)
		if rng.IntN(3) > 0 {
			room = int64(rng.IntN(4)) * 4e9
		}
		// The disk: its titles, of which those in use fill all but room.
		n.Capacity.DiskBytes = n.InUseBytes + room
		if n.StoredBytes > n.Capacity.DiskBytes {
			n.Capacity.DiskBytes = n.StoredBytes
		}
		report := Report{EgressBps: n.ReservedBps}
		if rng.IntN(10) == 0 {
			report.EgressBps = int64(float64(n.Capacity.EgressBps) * (0.91 + 0.07*rng.Float64()))
		}
		if err := s.Heartbeat(ids[i], report, t0); err != nil {
			b.Fatal(err)
		}
	}
	pick := zipfTitles(titles, 0.9)
	reqs := make([]Request, 1<<16)
	for i := range reqs {
		t := pick(rng)
		reqs[i] = Request{Title: names[t], Client: fmt.Sprintf("sub-%d", rng.IntN(200_000)), Bitrate: rate[t], Bytes: size[t]}
	}
	warm(b, s, reqs)
	return s, reqs
}

// BenchmarkDecisionLallLoaded measures the default policy's decision in
// the state of loadedScheduler: full disks, hot nodes, overloaded
// holders, replicated hot titles, three bitrates. Some requests find no
// node (they would wait in the queue); they are decisions too.
func BenchmarkDecisionLallLoaded(b *testing.B) {
	for _, nodes := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			s, reqs := loadedScheduler(b, nodes)
			decide(b, s, reqs, true)
		})
	}
}

// BenchmarkDecisionLallLoadedTail times each decision (Place alone) in
// the state of loadedScheduler and reports its distribution: p50, p99,
// p99.9 and the worst of the run, in ns (each timing includes a clock
// read, some 20-40 ns).
func BenchmarkDecisionLallLoadedTail(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			s, reqs := loadedScheduler(b, nodes)
			ns := make([]int64, 0, min(b.N, 1<<22))
			r := new(Request)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				*r = reqs[i&(len(reqs)-1)]
				start := time.Now()
				res, err := s.Place(r, t0)
				d := time.Since(start)
				if len(ns) < cap(ns) {
					ns = append(ns, d.Nanoseconds())
				}
				if err == nil {
					undo(s, res)
				}
			}
			b.StopTimer()
			slices.Sort(ns)
			q := func(p float64) float64 { return float64(ns[min(len(ns)-1, int(p*float64(len(ns))))]) }
			b.ReportMetric(q(0.5), "p50-ns")
			b.ReportMetric(q(0.99), "p99-ns")
			b.ReportMetric(q(0.999), "p99.9-ns")
			b.ReportMetric(float64(ns[len(ns)-1]), "max-ns")
		})
	}
}
