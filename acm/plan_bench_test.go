package acm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// planBench is a manager at the scale of a large operator's catalog:
// titles titles of 1 to 8 GiB at 4 Mbit/s, nodes nodes registered in
// process (no heartbeats, none declared dead), each holding the most
// requested titles round robin up to nine tenths of a disk sized for half
// the catalog over all nodes, and a popularity learnt from 20 requests
// per title drawn with a long tail. newPlanBenchSites puts the nodes at
// sites (node i at site i mod sites), 70% of each title's requests from
// one site, the rest from any.
type planBench struct {
	e   *env
	now time.Time
}

func newPlanBench(b *testing.B, nodes, titles int) *planBench {
	b.Helper()
	return newPlanBenchSites(b, nodes, titles, 0)
}

// newPlanBenchSites is newPlanBench with the nodes at sites sites.
func newPlanBenchSites(b *testing.B, nodes, titles, sites int) *planBench {
	b.Helper()
	siteOf := func(i int) string { return fmt.Sprint("s", i%max(sites, 1)) }
	e := newManager(b, "", func(m *Manager) {
		m.PlanInterval, m.ShiftCheck, m.PopularitySave, m.CatalogRefresh = time.Hour, time.Hour, time.Hour, time.Hour
		m.Scheduler.HeartbeatInterval = time.Hour
		m.Replicator.OffPeak = smm.Window{Start: 0, End: 24 * time.Hour}
		for i := range sites {
			m.Sites = append(m.Sites, Site{Name: siteOf(i), Clients: []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16)}})
		}
	})
	m := e.m
	rng := rand.New(rand.NewPCG(1, 1))
	ts := make([]store.Title, titles)
	var total int64
	for i := range ts {
		ts[i] = store.Title{ID: fmt.Sprintf("t%06d", i), BitrateBps: 4_000_000, DurationS: 3000, SizeBytes: (1 + rng.Int64N(8)) << 30}
		total += ts[i].SizeBytes
	}
	m.setCatalog(ts)
	now := time.Now()
	m.mu.Lock()
	for range 20 * titles {
		i := int(float64(titles) * rng.Float64() * rng.Float64() * rng.Float64())
		if sites == 0 {
			m.planner.Observe(ts[i].ID, now)
			continue
		}
		site := i % sites
		if rng.Float64() >= 0.7 {
			site = rng.IntN(sites)
		}
		smm.Observe(m.planner, ts[i].ID, siteOf(site), now)
	}
	m.mu.Unlock()
	disk := total / int64(nodes) / 2
	held := make([][]*pb.StoredTitle, nodes)
	used := make([]int64, nodes)
	for i, n := 0, 0; i < titles; i++ {
		t := ts[i]
		if used[n]+t.SizeBytes > disk*9/10 {
			break
		}
		held[n] = append(held[n], &pb.StoredTitle{TitleId: t.ID, SizeBytes: t.SizeBytes, StoredBytes: t.SizeBytes})
		used[n] += t.SizeBytes
		n = (n + 1) % nodes
	}
	nc := &nodeControl{m: m}
	for i := range nodes {
		site := ""
		if sites > 0 {
			site = siteOf(i)
		}
		_, err := nc.Register(context.Background(), &pb.RegisterRequest{
			NodeId: fmt.Sprintf("n%02d", i), RtspAddr: "127.0.0.1:1", Titles: held[i], Site: site,
			Capacity: &pb.NodeCapacity{EgressBps: 10_000_000_000, DiskBytes: disk},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return &planBench{e: e, now: now}
}

// completeFills applies a load report of every node in which the fills
// it was ordered are complete and the titles it was ordered to evict gone,
// as nodes report between two plans.
func (p *planBench) completeFills(b *testing.B) {
	m := p.e.m
	m.mu.Lock()
	reps := make(map[*nodeState]*pb.LoadReport, len(m.nodes))
	for _, ns := range m.nodes {
		r := &pb.LoadReport{NodeId: ns.id, AtUnixMs: p.now.UnixMilli(), DiskFreeBytes: m.sched.Node(ns.id).Capacity.DiskBytes}
		for id, t := range ns.titles {
			r.Titles = append(r.Titles, &pb.StoredTitle{TitleId: id, SizeBytes: t.GetSizeBytes(), StoredBytes: t.GetSizeBytes()})
			r.DiskFreeBytes -= t.GetSizeBytes()
		}
		reps[ns] = r
	}
	m.mu.Unlock()
	for ns, r := range reps {
		if err := m.report(ns, ns.streamGen, r); err != nil {
			b.Fatal(err)
		}
	}
}

// lockProbe measures how long m.mu is waited for while it runs: a
// goroutine takes and gives back the lock in a loop and keeps the longest
// wait. stop ends it and returns that wait.
func lockProbe(m *Manager) (stop func() time.Duration) {
	var done atomic.Bool
	var wg sync.WaitGroup
	var worst time.Duration
	wg.Go(func() {
		for i := 0; !done.Load() && i < 100_000_000; i++ {
			t := time.Now()
			m.mu.Lock()
			worst = max(worst, time.Since(t))
			m.mu.Unlock()
			time.Sleep(50 * time.Microsecond)
		}
	})
	return func() time.Duration {
		done.Store(true)
		wg.Wait()
		return worst
	}
}

// BenchmarkPlanLock measures one storage plan of the manager at 100,000
// titles and 20 nodes (about 2,500 titles on each): how long m.mu is held
// (hold-ms: taking the snapshot, snapshot-ms, and carrying out the
// orders, finish-ms), the work done without it (view-ms: building the
// planner's view; smm-plan-ms: the Replicator's plan), and the longest a
// goroutine waits for m.mu during a plan (max-wait-ms: what a front-door
// admission arriving then waits).
func BenchmarkPlanLock(b *testing.B) { benchPlanLock(b, 0) }

// BenchmarkPlanLockSites is BenchmarkPlanLock with the 20 nodes at 4
// sites and each title's viewers mostly at one of them (newPlanBench).
func BenchmarkPlanLockSites(b *testing.B) { benchPlanLock(b, 4) }

func benchPlanLock(b *testing.B, sites int) {
	p := newPlanBenchSites(b, 20, 100_000, sites)
	m := p.e.m
	var snap, view, plan, finish, worst time.Duration
	n, acted := 0, 0
	for b.Loop() {
		p.completeFills(b)
		p.now = p.now.Add(time.Minute)
		stop := lockProbe(m)
		m.planMu.Lock()
		catp := m.catalog.Load()
		m.mu.Lock()
		t0 := time.Now()
		s, job := m.startPlanLocked(p.now)
		t1 := time.Now()
		m.mu.Unlock()
		v := s.view(m.planTitlesFor(catp))
		t2 := time.Now()
		job.Run(v)
		t3 := time.Now()
		m.mu.Lock()
		t4 := time.Now()
		m.finishPlanLocked(s, job, *catp, p.now)
		t5 := time.Now()
		m.mu.Unlock()
		m.planMu.Unlock()
		worst = max(worst, stop())
		snap += t1.Sub(t0)
		view += t2.Sub(t1)
		plan += t3.Sub(t2)
		finish += t5.Sub(t4)
		n++
		acted += countOrders(b, p.e)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(n) / 1e6 }
	b.ReportMetric(ms(snap+finish), "hold-ms")
	b.ReportMetric(ms(snap), "snapshot-ms")
	b.ReportMetric(ms(finish), "finish-ms")
	b.ReportMetric(ms(view), "view-ms")
	b.ReportMetric(ms(plan), "smm-plan-ms")
	b.ReportMetric(float64(worst)/1e6, "max-wait-ms")
	b.ReportMetric(float64(acted)/float64(n), "orders/op")
}

// countOrders returns how many prefetch and evict commands wait in the
// nodes' queues, and empties the queues (no stream sends them).
func countOrders(b *testing.B, e *env) int {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	k := 0
	for _, ns := range e.m.nodes {
		for _, c := range ns.queue {
			if c.GetPrefetch() != nil || c.GetEvict() != nil {
				k++
			}
		}
		ns.queue = nil
	}
	return k
}
