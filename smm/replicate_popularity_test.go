package smm

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// TitleDemands ranks the titles by expected demand with the figures Plan
// uses: the request rate (count * ln 2 / half-life), the demand by
// Little's law (rate * half the duration before any session ended *
// bitrate), the plan's replicas and nodes, and the demand scaled to the
// remembered peak, which decays slower than the titles' rates (12 h
// against 3 h): six hours after the plan, with no request since, a
// title's demand is a quarter of what it was and the peak 2^-1/2 of the
// total then, so the peak demand is 2^1.5 times the demand.
func TestTitleDemandsRankAndFigures(t *testing.T) {
	c := newCluster(3, 4)
	r := newRep(t, ReplicatorConfig{})
	info := func(id string) (TitleInfo, bool) { ti, ok := c.view.Titles[id]; return ti, ok }
	for range 40 {
		r.Observe("t01", offPeak)
	}
	for range 10 {
		r.Observe("t00", offPeak)
	}
	r.Observe("gone", offPeak) // not in the catalog: no bitrate, no demand
	if _, err := r.Pins().Pin("n2", "t03"); err != nil {
		t.Fatal(err)
	}
	c.apply(t, r.Plan(offPeak, &c.view))

	v := r.CopyPopularity(nil).TitleDemands(offPeak, info, 0)
	var order []string
	for _, d := range v.Titles {
		order = append(order, d.Title)
	}
	// gone before t03: its requests give it a value, t03 (pinned, never
	// requested) has none.
	if want := []string{"t01", "t00", "gone", "t03"}; !slices.Equal(order, want) {
		t.Fatalf("ranking %v, want %v", order, want)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Abs(want) }
	perS := math.Ln2 / (3 * time.Hour).Seconds()
	top := v.Titles[0]
	if !near(top.Rate, 40*perS) || !near(top.Value, 40*math.Ln2/(24*time.Hour).Seconds()) {
		t.Errorf("t01 rate %g value %g req/s, want %g and %g", top.Rate, top.Value, 40*perS, 40*math.Ln2/(24*time.Hour).Seconds())
	}
	if top.MeanSession != 1000 || !near(top.Demand, 40*perS*1000*4e6) || !near(top.PeakDemand, top.Demand) {
		t.Errorf("t01 mean session %g s, demand %g, peak demand %g bit/s; want 1000 s and %g bit/s both", top.MeanSession, top.Demand, top.PeakDemand, 40*perS*1000*4e6)
	}
	nodes, k := r.PlannedNodes("t01")
	slices.Sort(nodes)
	if top.Replicas != k || k < 1 || !slices.Equal(top.Nodes, nodes) {
		t.Errorf("t01 planned %d on %v, want the plan's %d on %v", top.Replicas, top.Nodes, k, nodes)
	}
	if g := v.Titles[2]; g.Rate == 0 || g.Demand != 0 || g.Replicas != 0 {
		t.Errorf("a title not in the catalog: %+v, want a rate, no demand and no replica", g)
	}
	if p := v.Titles[3]; p.Rate != 0 || p.Replicas != 1 || !slices.Equal(p.Nodes, []string{"n2"}) {
		t.Errorf("a pinned title never requested: %+v, want no rate and its one replica on n2", p)
	}
	if !near(v.Demand, 50*perS*1000*4e6) || !near(v.Peak, v.Demand) {
		t.Errorf("total demand %g, peak %g bit/s; want both %g", v.Demand, v.Peak, 50*perS*1000*4e6)
	}

	later := offPeak.Add(6 * time.Hour)
	w := r.CopyPopularity(nil).TitleDemands(later, info, 0)
	if !near(w.Demand, v.Demand/4) || !near(w.Peak, v.Demand*math.Sqrt2/2) {
		t.Errorf("6 h later: total demand %g, peak %g bit/s; want %g and %g", w.Demand, w.Peak, v.Demand/4, v.Demand*math.Sqrt2/2)
	}
	if d := w.Titles[0]; d.Title != "t01" || !near(d.PeakDemand, d.Demand*2*math.Sqrt2) {
		t.Errorf("6 h later: %s demand %g, peak demand %g bit/s; want t01 with 2^1.5 times its demand", d.Title, d.Demand, d.PeakDemand)
	}
	// Listing changes nothing the next plan sees: the titles stay known.
	if n := len(r.CopyPopularity(nil).TitleDemands(later, info, 0).Titles); n != 4 {
		t.Errorf("%d titles listed again, want 4", n)
	}
	for i, d := range w.Titles {
		if d.Rank != i+1 {
			t.Errorf("%s at %d has rank %d", d.Title, i, d.Rank)
		}
	}

	// The first 2 alone, and each title alone, with the same figures;
	// a title it knows nothing of has no rank, only its mean session.
	first := r.CopyPopularity(nil).TitleDemands(later, info, 2)
	if len(first.Titles) != 2 || first.Known != 4 || first.Titles[0].Title != "t01" || first.Titles[1].Title != "t00" || first.Titles[1].Rank != 2 {
		t.Errorf("limit 2: %+v, want t01 and t00 of 4", first)
	}
	for _, d := range w.Titles {
		one := r.CopyPopularity(nil).TitleDemandOf(d.Title, later, info)
		if len(one.Titles) != 1 || one.Titles[0].Rank != d.Rank || one.Titles[0].Demand != d.Demand || !near(one.Titles[0].PeakDemand, d.PeakDemand) ||
			!slices.Equal(one.Titles[0].Nodes, d.Nodes) || one.Known != 4 || !near(one.Peak, w.Peak) {
			t.Errorf("%s alone: %+v, want %+v", d.Title, one, d)
		}
	}
	if one := r.CopyPopularity(nil).TitleDemandOf("t02", later, info); one.Titles[0].Rank != 0 || one.Titles[0].Rate != 0 || one.Titles[0].MeanSession != 1000 {
		t.Errorf("t02, never requested: %+v, want no rank, no rate, a mean session of 1000 s", one.Titles[0])
	}

	// A copy made again in the buffers of one read before shows the
	// requests since, and the first copy's figures were its own.
	cp := r.CopyPopularity(nil)
	before := cp.TitleDemands(later, info, 1)
	for range 100 {
		r.Observe("t02", later)
	}
	after := r.CopyPopularity(cp).TitleDemands(later, info, 1)
	if before.Titles[0].Title != "t01" || after.Titles[0].Title != "t02" || after.Known != 5 || !near(after.Titles[0].Rate, 100*perS) {
		t.Errorf("first title %+v before 100 requests of t02, %+v after; want t01, then t02 at %g req/s of 5 titles", before.Titles[0], after, 100*perS)
	}
}

// popularity100k returns a Replicator that learnt 100,000 titles, and
// their catalog entries.
func popularity100k(b *testing.B) (*Replicator, func(string) (TitleInfo, bool)) {
	c := newCluster(1, 0)
	r, err := NewReplicator(ReplicatorConfig{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		id := fmt.Sprintf("t%06d", i)
		c.view.Titles[id] = TitleInfo{ID: id, Bytes: 1 << 30, Bitrate: 4e6, Duration: 2000}
		for range 1 + i%7 {
			r.Observe(id, offPeak)
		}
	}
	return r, func(id string) (TitleInfo, bool) { ti, ok := c.view.Titles[id]; return ti, ok }
}

// BenchmarkCopyPopularity100k copies the popularity of 100,000 titles
// into the buffers of the copy before, what the manager does under its
// lock for vodctl popularity.
func BenchmarkCopyPopularity100k(b *testing.B) {
	r, _ := popularity100k(b)
	c := r.CopyPopularity(nil)
	b.ResetTimer()
	for range b.N {
		c = r.CopyPopularity(c)
	}
}

// BenchmarkTitleDemands100k lists the first 20 of 100,000 titles from a
// copy, as the manager does without its lock.
func BenchmarkTitleDemands100k(b *testing.B) {
	r, info := popularity100k(b)
	b.ResetTimer()
	for range b.N {
		r.CopyPopularity(nil).TitleDemands(offPeak, info, 20)
	}
}
