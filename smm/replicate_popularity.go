package smm

import (
	"container/heap"
	"math"
	"slices"
	"time"
)

// TitleDemand is what a Replicator learnt of one title, and the title's
// place in the current plan, as TitleDemands reports it to the operator.
type TitleDemand struct {
	Title string
	// Rank is the title's place among the titles the Replicator knows, by
	// Demand (highest first), then by Value, then by title: 1 for the most
	// demanded; 0 for a title it knows nothing of (TitleDemandOf).
	Rank int
	// Rate is the demand tracker's request rate at now (HalfLife), and
	// Value the ranking's (RankHalfLife), both in requests per second.
	Rate, Value float64
	// MeanSession is the expected length of one session, seconds
	// (Popularity.MeanSession).
	MeanSession float64
	// Demand is the expected demand at now, bit/s (Popularity.Demand);
	// PeakDemand is Demand scaled to the remembered peak of the cluster's
	// total demand, bit/s: what Plan counts the title's replicas for.
	Demand, PeakDemand float64
	// Replicas is the current plan's replica count (0: not planned), and
	// Nodes the nodes it places them on (at most Replicas), sorted.
	Replicas int
	Nodes    []string
}

// PopularityView is the Replicator's popularity as TitleDemands and
// TitleDemandOf report it.
type PopularityView struct {
	Titles []TitleDemand // by Rank
	// Known counts the titles the demand tracker, the ranking or the
	// current plan knows.
	Known int
	// Demand is the cluster's total expected demand at now, bit/s (over
	// the titles in the catalog), and Peak the remembered peak of it as
	// the next Plan sees it (decayed with PeakHalfLife since the last
	// Plan, and at least Demand), bit/s.
	Demand, Peak float64
}

// PopularityCopy is a copy of a Replicator's popularity and its last
// plan, taken under the caller's lock (CopyPopularity) and read without
// it (TitleDemands, TitleDemandOf), as a plan job computes on a copy: a
// pass over a hundred thousand titles and their catalog entries takes
// tens of milliseconds, the copy one memory copy. Not safe for concurrent
// use.
type PopularityCopy struct {
	pop, rank *Popularity
	// plan is the Replicator's last plan, shared: a plan replaces it,
	// never changes it in place.
	plan         map[string]*titlePlan
	peak         float64   // remembered peak of total demand, bit/s, as of at
	at           time.Time // the last Plan
	peakHalfLife time.Duration
}

// CopyPopularity returns a copy of the Replicator's popularity trackers,
// its last plan and its remembered peak, for TitleDemands and
// TitleDemandOf, made in into's buffers (an earlier copy no longer read:
// one memory copy, no allocation) or, into nil, in new ones. During a
// plan job (StartPlan) the plan copied is the last one finished.
func (r *Replicator) CopyPopularity(into *PopularityCopy) *PopularityCopy {
	if into == nil {
		into = &PopularityCopy{}
	}
	*into = PopularityCopy{pop: r.pop.copyInto(into.pop), rank: r.rank.copyInto(into.rank), plan: r.plan,
		peak: r.peak, at: r.at, peakHalfLife: r.cfg.PeakHalfLife}
	return into
}

// TitleDemands returns the popularity the Replicator had learnt at the
// copy, at now, for the operator: the first limit titles by rank (every
// one when limit <= 0) with their request rates, mean session, expected
// demand (bit/s, now and at the peak) and planned replicas. info gives a
// title's catalog entry (ok false: not in the catalog, whose demand is
// then 0: its bitrate is unknown). It returns no error. One pass over the
// known titles, and a heap of limit of them.
func (c *PopularityCopy) TitleDemands(now time.Time, info func(title string) (TitleInfo, bool), limit int) PopularityView {
	var top worstFirst
	v := c.eachDemand(now, info, func(d TitleDemand) {
		switch {
		case limit <= 0 || len(top) < limit:
			heap.Push(&top, d)
		case d.before(&top[0]):
			top[0] = d
			heap.Fix(&top, 0)
		}
	})
	v.Titles = make([]TitleDemand, len(top))
	for i := len(top) - 1; i >= 0; i-- {
		v.Titles[i] = heap.Pop(&top).(TitleDemand)
		v.Titles[i].Rank = i + 1
	}
	c.finish(&v, now)
	return v
}

// TitleDemandOf is TitleDemands for title alone (one entry in Titles):
// its Rank 0 and its figures zero, but for the mean session it would
// have, when the Replicator knows nothing of it.
func (c *PopularityCopy) TitleDemandOf(title string, now time.Time, info func(title string) (TitleInfo, bool)) PopularityView {
	c.pop.reindex()
	c.rank.reindex()
	d, _ := c.demandRow(title, c.pop.lookup(title), now, info)
	if c.pop.has(title) || c.rank.has(title) || c.plan[title] != nil {
		d.Rank = 1
	}
	v := c.eachDemand(now, info, func(o TitleDemand) {
		if d.Rank > 0 && o.before(&d) {
			d.Rank++
		}
	})
	v.Titles = []TitleDemand{d}
	c.finish(&v, now)
	return v
}

// eachDemand calls f with every known title's figures at now but
// PeakDemand and the plan's nodes, in no set order, and returns the view
// without titles.
func (c *PopularityCopy) eachDemand(now time.Time, info func(string) (TitleInfo, bool), f func(TitleDemand)) PopularityView {
	c.pop.reindex()
	c.rank.reindex()
	var v PopularityView
	add := func(d TitleDemand, inCatalog bool) {
		if inCatalog {
			v.Demand += d.Demand
		}
		v.Known++
		f(d)
	}
	for i := range c.pop.entries {
		e := &c.pop.entries[i]
		add(c.demandRow(e.title, &e.pop, now, info))
	}
	for i := range c.rank.entries {
		if id := c.rank.entries[i].title; !c.pop.has(id) {
			add(c.demandRow(id, nil, now, info))
		}
	}
	for id := range c.plan {
		if !c.pop.has(id) && !c.rank.has(id) {
			add(c.demandRow(id, nil, now, info))
		}
	}
	return v
}

// demandRow returns title's figures at now but PeakDemand and the plan's
// nodes, x being its record in the demand tracker (nil when none), and
// whether its demand counts in the cluster's: the title is in the
// catalog with a size, as Plan counts it. Every figure is computed here,
// so that a title alone (TitleDemandOf) compares with the others exactly.
func (c *PopularityCopy) demandRow(title string, x *pop, now time.Time, info func(string) (TitleInfo, bool)) (TitleDemand, bool) {
	ti, ok := info(title)
	d := TitleDemand{Title: title, Value: c.rank.Rate(title, now)}
	if x != nil {
		c.pop.decay(x, now)
		d.Rate = x.rate * math.Ln2 / c.pop.halfLife().Seconds()
	}
	d.MeanSession = c.pop.meanSession(x, ti.Duration)
	d.Demand = demandBps(d.Rate, d.MeanSession, ti.Bitrate)
	if p := c.plan[title]; p != nil {
		d.Replicas = p.replicas
	}
	return d, ok && ti.Bytes > 0
}

// demandBps is the expected demand of rate requests per second of
// sessions lasting meanSession seconds at bitrate bit/s, bit/s; 0 for a
// nonsensical figure (as Plan takes it).
func demandBps(rate, meanSession float64, bitrate int64) float64 {
	if rate == 0 || bitrate <= 0 {
		return 0
	}
	d := rate * meanSession * float64(bitrate)
	if !(d >= 0) || math.IsInf(d, 0) {
		return 0
	}
	return d
}

// finish sets v's Peak at now, and its titles' PeakDemand and plan's
// nodes.
func (c *PopularityCopy) finish(v *PopularityView, now time.Time) {
	v.Peak = c.peak
	if !c.at.IsZero() && now.After(c.at) {
		// decayed as the next Plan decays it, from the last Plan on
		v.Peak *= math.Exp2(-now.Sub(c.at).Seconds() / c.peakHalfLife.Seconds())
	}
	v.Peak = max(v.Peak, v.Demand)
	scale := 1.0
	if v.Demand > 0 {
		scale = v.Peak / v.Demand
	}
	for i := range v.Titles {
		d := &v.Titles[i]
		d.PeakDemand = d.Demand * scale
		if p := c.plan[d.Title]; p != nil {
			d.Nodes = slices.Sorted(slices.Values(p.nodes))
		}
	}
}

// before reports whether d ranks before o: more demand, then more value,
// then by title.
func (d *TitleDemand) before(o *TitleDemand) bool {
	if d.Demand != o.Demand {
		return d.Demand > o.Demand
	}
	if d.Value != o.Value {
		return d.Value > o.Value
	}
	return d.Title < o.Title
}

// worstFirst is a heap of titles whose top ranks last: the one a better
// title replaces among the first limit.
type worstFirst []TitleDemand

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return h[j].before(&h[i]) }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(TitleDemand)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
