package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// title is one catalog entry.
type title struct {
	id      string
	bytes   int64
	bitrate int64   // bit/s
	dur     float64 // seconds
	avail   float64 // seconds since the start when it enters the catalog
}

// request is one viewer asking for a title.
type request struct {
	t     float64 // seconds since the start of the run
	title int32
	sub   int32   // subscriber
	watch float64 // seconds the viewer will watch if admitted
	first float64 // a resumed request: when the viewer first asked (> 0)
}

// asked returns when the viewer first asked.
func (r request) asked() float64 {
	if r.first > 0 {
		return r.first
	}
	return r.t
}

// outage is a node failure and its return.
type outage struct {
	node     int
	down, up float64 // seconds
}

// demand is everything the seed decides before any policy runs, so every
// policy sees exactly the same requests and failures.
type demand struct {
	titles       []title
	initialBytes int64 // catalog bytes at the start
	reqs         []request
	outages      []outage
}

const day = 86400.0

// generate draws the demand of cfg from its seed.
func generate(cfg *Config, nodes int) *demand {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed5eed))
	d := &demand{}
	dm := &cfg.Demand

	kindShare := 0.0
	for _, k := range dm.Kinds {
		kindShare += k.Share
	}
	newTitle := func() title {
		x := rng.Float64() * kindShare
		k := dm.Kinds[len(dm.Kinds)-1]
		for _, kk := range dm.Kinds {
			if x < kk.Share {
				k = kk
				break
			}
			x -= kk.Share
		}
		dur := k.MinLength.Seconds() + rng.Float64()*(k.MaxLength-k.MinLength).Seconds()
		dur = math.Round(dur)
		t := title{id: fmt.Sprintf("t%06d", len(d.titles)), bitrate: k.BitrateBps, dur: dur}
		t.bytes = int64(dur * float64(k.BitrateBps) / 8)
		return t
	}
	for i := 0; i < dm.Titles; i++ {
		d.titles = append(d.titles, newTitle())
		d.initialBytes += d.titles[i].bytes
	}
	taste := newSiteTaste(&cfg.Sites, cfg.Seed) // nil without sites
	if taste != nil {
		taste.add(0, len(d.titles))
	}

	// Popularity: title at rank k has weight 1/k^alpha; ranks are a random
	// permutation of the catalog.
	weight := make([]float64, dm.Titles)
	for k, i := range rng.Perm(dm.Titles) {
		weight[i] = math.Pow(float64(k+1), -dm.ZipfAlpha)
	}
	cum := make([]float64, 0, len(weight))
	rebuild := func() {
		cum = cum[:0]
		s := 0.0
		for _, w := range weight {
			s += w
			cum = append(cum, s)
		}
	}
	rebuild()

	// Arrivals: a Poisson process whose rate follows the hourly curve
	// (linear between hours), drawn by thinning a process at the peak rate.
	mean := 0.0
	peak := 0.0
	for _, v := range dm.Hourly {
		mean += v / 24
		peak = max(peak, v)
	}
	perSecond := float64(dm.Subscribers) * dm.SessionsPerSubscriber / day
	rate := func(t float64) float64 {
		h := math.Mod(t/3600, 24)
		i := int(h)
		f := h - float64(i)
		v := dm.Hourly[i]*(1-f) + dm.Hourly[(i+1)%24]*f
		return perSecond * v / mean
	}
	lmax := perSecond * peak / mean
	end := float64(cfg.Days) * day
	nextNew := dm.NewTitleHour * 3600
	nextDrift := day
	for t := rng.ExpFloat64() / lmax; t < end; t += rng.ExpFloat64() / lmax {
		changed := false
		for t >= nextNew {
			lo := len(d.titles)
			for j := 0; j < dm.NewTitlesPerDay; j++ {
				nt := newTitle()
				nt.avail = nextNew
				d.titles = append(d.titles, nt)
				rank := 1 + rng.IntN(dm.NewTitleTopRank)
				weight = append(weight, math.Pow(float64(rank), -dm.ZipfAlpha))
			}
			if taste != nil {
				taste.add(lo, len(d.titles))
			}
			nextNew += day
			changed = true
		}
		for t >= nextDrift {
			for i := range weight {
				weight[i] *= math.Exp(dm.DriftSigma * rng.NormFloat64())
			}
			nextDrift += day
			changed = true
		}
		if changed {
			rebuild()
		}
		if rng.Float64()*lmax > rate(t) {
			continue
		}
		x := rng.Float64() * cum[len(cum)-1]
		ti := sort.SearchFloat64s(cum, x)
		if ti >= len(cum) {
			ti = len(cum) - 1
		}
		var watch float64
		if rng.Float64() < dm.EarlyAbandon {
			watch = rng.ExpFloat64() * dm.EarlyAbandonMean.Seconds()
		} else {
			watch = dm.WatchMedian.Seconds() * math.Exp(dm.WatchSigma*rng.NormFloat64())
		}
		sub := int32(rng.IntN(dm.Subscribers))
		if taste != nil {
			ti = taste.pick(sub, ti) // the viewer's site's own ranking, for a share of its requests
		}
		watch = math.Max(10, math.Min(watch, d.titles[ti].dur))
		d.reqs = append(d.reqs, request{t: t, title: int32(ti), sub: sub, watch: watch})
	}

	// Outages: Poisson in time, on a node drawn uniformly; a node already
	// down at the time is left alone.
	f := &cfg.Failures
	if f.PerDay > 0 {
		upAt := make([]float64, nodes)
		for t := rng.ExpFloat64() * day / f.PerDay; t < end; t += rng.ExpFloat64() * day / f.PerDay {
			n := rng.IntN(nodes)
			if t < upAt[n] {
				continue
			}
			down := math.Max(60, rng.ExpFloat64()*f.DownMean.Seconds())
			d.outages = append(d.outages, outage{node: n, down: t, up: t + down})
			upAt[n] = t + down
		}
	}
	return d
}
