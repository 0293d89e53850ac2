package acm

import (
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// BenchmarkLoadReport measures the manager applying one node's load report
// (every heartbeat, 1 s by default) at a large operator's scale: 100,000
// titles, 20 nodes holding about 2,500 titles each, every title listed in
// each report. steady: the report says what the one before said (most
// reports): its fingerprint and title map are built before the manager's
// lock is taken, which is then held for microseconds (reportsteady.go).
// changed: one title differs each time (two lists in turn), applied in
// full under the lock (the cost every report had before). print: the
// fingerprint alone, outside the lock: steady minus print is the lock's
// share of a steady report.
func BenchmarkLoadReport(b *testing.B) {
	p := newPlanBench(b, 20, 100_000)
	m := p.e.m
	m.mu.Lock()
	var ns *nodeState
	for _, n := range m.nodes {
		ns = n
		break
	}
	r := &pb.LoadReport{NodeId: ns.id, AtUnixMs: p.now.UnixMilli(), DiskFreeBytes: m.sched.Node(ns.id).Capacity.DiskBytes}
	for id, t := range ns.titles {
		r.Titles = append(r.Titles, &pb.StoredTitle{TitleId: id, SizeBytes: t.GetSizeBytes(), StoredBytes: t.GetSizeBytes()})
		r.DiskFreeBytes -= t.GetSizeBytes()
	}
	m.mu.Unlock()
	// other lists one title less: the node evicted it on its own.
	other := &pb.LoadReport{NodeId: r.NodeId, AtUnixMs: r.AtUnixMs, DiskFreeBytes: r.DiskFreeBytes, Titles: r.Titles[1:]}
	apply := func(b *testing.B, r *pb.LoadReport) {
		if err := m.report(ns, ns.streamGen, r); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("steady", func(b *testing.B) {
		b.ReportMetric(float64(len(r.Titles)), "titles/report")
		apply(b, r)
		for b.Loop() {
			apply(b, r)
		}
	})
	b.Run("changed", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if i++; i%2 == 0 {
				apply(b, r)
			} else {
				apply(b, other)
			}
		}
	})
	b.Run("print", func(b *testing.B) {
		for b.Loop() {
			reportPrint(r)
		}
	})
}
