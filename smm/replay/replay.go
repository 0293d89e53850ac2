package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"vodcluster/smm"
	"vodcluster/smm/bound"
)

// Result is what one policy did over one trace.
type Result struct {
	Policy      string `json:"policy"`
	Requests    int    `json:"requests"`
	Hits        int    `json:"hits"`
	Fetches     int    `json:"fetches"`      // requests for a title not on the cache
	OriginBytes int64  `json:"origin_bytes"` // bytes of those fetches
	Evictions   int    `json:"evictions"`
	Bypassed    int    `json:"bypassed"` // fetches not kept (too large, or refused by an Admitter)
}

// epoch is the virtual clock's origin: a trace's time 0.
var epoch = time.Unix(0, 0).UTC() // wall clock: the trace's time 0

// Run replays reqs through one cache of capacity bytes managed by ev, as
// the cluster's disk would be if it were one cache: a request for a title
// on the cache is a hit; otherwise it is a fetch of the title's bytes, and
// the title is kept after evicting ev's victims when it fits (and, when ev
// is an Admitter, when it is admitted). Requests take no time, so nothing
// is ever in use. ev should be fresh; Recorder policies hear every request.
// It fails on a malformed trace or a negative capacity.
func Run(reqs []bound.Request, capacity int64, ev smm.Evictor) (Result, error) {
	if capacity < 0 {
		return Result{}, fmt.Errorf("replay: negative capacity %d", capacity)
	}
	res := Result{Policy: ev.Name(), Requests: len(reqs)}
	rec, _ := ev.(smm.Recorder)
	adm, _ := ev.(smm.Admitter)
	var items []smm.Item
	idx := map[string]int{}
	var used int64
	prev := math.Inf(-1)
	remove := func(title string) {
		i := idx[title]
		used -= items[i].Bytes
		last := len(items) - 1
		items[i] = items[last]
		idx[items[i].Title] = i
		items = items[:last]
		delete(idx, title)
	}
	for n, r := range reqs {
		if r.Title == "" || r.Bytes <= 0 || math.IsNaN(r.Time) || r.Time < prev {
			return res, fmt.Errorf("replay: request %d: bad %+v", n, r)
		}
		prev = r.Time
		// The n nanoseconds keep requests of the same second in order.
		now := epoch.Add(time.Duration(r.Time*1e9) + time.Duration(n))
		if rec != nil {
			rec.Record(r.Title, r.Bytes, now)
		}
		if i, ok := idx[r.Title]; ok && items[i].Bytes == r.Bytes {
			res.Hits++
			items[i].LastAccess = now
			items[i].Hits++
			continue
		} else if ok {
			remove(r.Title) // the title changed size: a new object
		}
		res.Fetches++
		res.OriginBytes += r.Bytes
		if r.Bytes > capacity {
			res.Bypassed++
			continue
		}
		var victims []string
		if need := used + r.Bytes - capacity; need > 0 {
			v, ok := ev.Victims(items, need, now)
			if !ok {
				res.Bypassed++
				continue
			}
			victims = v
		}
		if adm != nil && len(victims) > 0 {
			vs := make([]smm.Item, len(victims))
			for i, t := range victims {
				vs[i] = items[idx[t]]
			}
			if !adm.Admit(r.Title, r.Bytes, vs, now) {
				res.Bypassed++
				continue
			}
		}
		for _, t := range victims {
			remove(t)
			res.Evictions++
		}
		idx[r.Title] = len(items)
		items = append(items, smm.Item{Title: r.Title, Bytes: r.Bytes, LastAccess: now, Hits: 1})
		used += r.Bytes
	}
	return res, nil
}

// Synthetic describes a synthetic trace: independent requests (Poisson
// arrivals) for Titles titles with Zipf(Alpha) popularity, each title's
// size drawn log-uniformly between MinBytes and MaxBytes, independently of
// its popularity. Drift, when > 0, is the share of the popularity ranking
// reshuffled every DriftEvery requests (new favourites replace old ones).
type Synthetic struct {
	Requests   int
	Titles     int
	Alpha      float64 // Zipf exponent, >= 0
	MinBytes   int64   // > 0
	MaxBytes   int64   // >= MinBytes
	RatePerSec float64 // mean requests per second; 0 means 1
	Drift      float64 // 0..1
	DriftEvery int     // requests; 0 means Requests/10
	Seed       uint64
}

// Trace generates the requests; it fails on parameters out of range.
func (s Synthetic) Trace() ([]bound.Request, error) {
	if s.Requests < 0 || s.Titles <= 0 || !(s.Alpha >= 0) || s.MinBytes <= 0 || s.MaxBytes < s.MinBytes || s.Drift < 0 || s.Drift > 1 || s.RatePerSec < 0 {
		return nil, fmt.Errorf("replay: synthetic trace parameters out of range: %+v", s)
	}
	rate := s.RatePerSec
	if rate == 0 {
		rate = 1
	}
	every := s.DriftEvery
	if every <= 0 {
		every = max(1, s.Requests/10)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	cdf := make([]float64, s.Titles)
	var sum float64
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), s.Alpha)
		cdf[i] = sum
	}
	size := make([]int64, s.Titles)
	names := make([]string, s.Titles)
	lmin, lmax := math.Log(float64(s.MinBytes)), math.Log(float64(s.MaxBytes))
	for i := range size {
		size[i] = int64(math.Exp(lmin + rng.Float64()*(lmax-lmin)))
		names[i] = fmt.Sprintf("title-%05d", i)
	}
	rank := rng.Perm(s.Titles) // rank -> title
	out := make([]bound.Request, s.Requests)
	tm := 0.0
	for i := range out {
		if s.Drift > 0 && i > 0 && i%every == 0 {
			k := int(s.Drift * float64(s.Titles))
			for range k {
				a, b := rng.IntN(s.Titles), rng.IntN(s.Titles)
				rank[a], rank[b] = rank[b], rank[a]
			}
		}
		u := rng.Float64() * sum
		lo, hi := 0, s.Titles-1
		for lo < hi {
			m := (lo + hi) / 2
			if cdf[m] < u {
				lo = m + 1
			} else {
				hi = m
			}
		}
		tm += rng.ExpFloat64() / rate
		o := rank[lo]
		out[i] = bound.Request{Time: tm, Title: names[o], Bytes: size[o]}
	}
	return out, nil
}
