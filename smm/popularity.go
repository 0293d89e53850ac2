package smm

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// DefaultWatchFraction is the share of a title's duration a session is
// assumed to last before any session end has been observed.
const DefaultWatchFraction = 0.5

// minSamples is the decayed number of session ends needed before a mean
// watch time is trusted (per title, then cluster-wide).
const minSamples = 4

// Popularity keeps, per title, a request count and an exponentially
// decayed request rate (requests per second, half-life HalfLife), and a
// decayed mean of how long sessions last, from which it estimates each
// title's expected demand in bit/s. Not safe for concurrent use.
type Popularity struct {
	HalfLife time.Duration // decay half-life; 0 means one hour
	// index maps a title to its entry; entries are kept in one slice so
	// that a pass over every title (Prune, Plan's demands, the shift
	// check's top titles) reads memory in order instead of chasing a
	// pointer per title.
	index   map[string]int32
	entries []popEntry
	sorted  []string // titles, sorted; nil when stale
	added   []string // titles created since sorted was built (not in it)
	stale   bool     // index to be rebuilt (a copy for a plan job: reindex)

	// Cluster-wide decayed session statistics: sum of watched fractions
	// of the title's duration, and their weight.
	fracSum, fracN float64
	statsAt        time.Time

	// Where each title's requests come from (ObserveSite,
	// popularity_sites.go): sites are the viewers' sites met so far, and
	// shares holds len(sites) shares per entry, in entries' order; both
	// nil until a request names a site.
	sites  []string
	shares []float32
}

// popEntry is one title's record in Popularity.entries.
type popEntry struct {
	title string
	pop
}

type pop struct {
	count int64
	rate  float64 // decayed request count (multiply by ln2/HalfLife for req/s)
	at    time.Time
	// decayed sum of watched seconds and number of session ends
	watchSum, watchN float64
}

// NewPopularity returns an empty tracker with the given half-life (0 or
// less means one hour).
func NewPopularity(halfLife time.Duration) *Popularity {
	if halfLife <= 0 {
		halfLife = time.Hour
	}
	return &Popularity{HalfLife: halfLife, index: map[string]int32{}}
}

func (p *Popularity) factor(from, to time.Time) float64 {
	dt := to.Sub(from)
	if dt <= 0 {
		return 1
	}
	return math.Exp2(-dt.Seconds() / p.halfLife().Seconds())
}

func (p *Popularity) halfLife() time.Duration {
	if p.HalfLife <= 0 {
		return time.Hour
	}
	return p.HalfLife
}

func (p *Popularity) decay(x *pop, now time.Time) {
	if now.After(x.at) {
		f := p.factor(x.at, now)
		x.rate *= f
		x.watchSum *= f
		x.watchN *= f
		x.at = now
	}
}

// get returns title's record, created when missing, decayed to now. The
// pointer is valid until the next record is created or pruned.
func (p *Popularity) get(title string, now time.Time) *pop {
	_, x := p.getAt(title, now)
	return x
}

// getAt is get that also returns the record's index in entries.
func (p *Popularity) getAt(title string, now time.Time) (int32, *pop) {
	if p.index == nil {
		p.index = map[string]int32{}
	}
	i, ok := p.index[title]
	if !ok {
		i = int32(len(p.entries))
		p.entries = append(p.entries, popEntry{title: title, pop: pop{at: now}})
		p.growShares()
		p.index[title] = i
		if p.sorted != nil {
			p.added = append(p.added, title)
		}
	}
	x := &p.entries[i].pop
	p.decay(x, now)
	return i, x
}

// lookup returns title's record without decaying it, nil when it has none.
func (p *Popularity) lookup(title string) *pop {
	if i, ok := p.index[title]; ok {
		return &p.entries[i].pop
	}
	return nil
}

// Observe counts one request for title at now, from no site in
// particular (ObserveSite with site "").
func (p *Popularity) Observe(title string, now time.Time) {
	p.ObserveSite(title, "", now)
}

// ObserveSession records the end of a session of title that lasted
// watched seconds, of a title lasting duration seconds (0 when unknown).
// Negative or NaN values are ignored.
func (p *Popularity) ObserveSession(title string, watched, duration float64, now time.Time) {
	if !(watched >= 0) || math.IsInf(watched, 0) {
		return
	}
	x := p.get(title, now)
	x.watchSum += watched
	x.watchN++
	if duration > 0 && !math.IsInf(duration, 0) {
		f := p.factor(p.statsAt, now)
		if p.statsAt.IsZero() || now.Before(p.statsAt) {
			f = 1
		}
		p.fracSum = p.fracSum*f + min(watched/duration, 1)
		p.fracN = p.fracN*f + 1
		if now.After(p.statsAt) {
			p.statsAt = now
		}
	}
}

// Count returns the number of requests seen for title.
func (p *Popularity) Count(title string) int64 {
	if x := p.lookup(title); x != nil {
		return x.count
	}
	return 0
}

// Rate returns title's decayed request rate at now, in requests per second.
func (p *Popularity) Rate(title string, now time.Time) float64 {
	x := p.lookup(title)
	if x == nil {
		return 0
	}
	p.decay(x, now)
	return x.rate * math.Ln2 / p.halfLife().Seconds()
}

// MeanSession returns the expected length of a session of title in
// seconds: the title's own decayed mean once enough of its sessions ended,
// else the cluster-wide mean watched fraction times duration, else
// DefaultWatchFraction times duration (duration in seconds; 0 when unknown
// gives 0 until the title's own sessions are known).
func (p *Popularity) MeanSession(title string, duration float64, now time.Time) float64 {
	if math.IsNaN(duration) || math.IsInf(duration, 0) {
		duration = 0
	}
	x := p.lookup(title)
	if x != nil {
		p.decay(x, now)
	}
	return p.meanSession(x, duration)
}

// meanSession is MeanSession for title's record x (decayed to now; nil
// when it has none) and a sanitised duration.
func (p *Popularity) meanSession(x *pop, duration float64) float64 {
	if math.IsNaN(duration) || math.IsInf(duration, 0) {
		duration = 0
	}
	if x != nil && x.watchN >= minSamples {
		m := x.watchSum / x.watchN
		if duration > 0 {
			m = min(m, duration)
		}
		return m
	}
	if duration <= 0 {
		return 0
	}
	if p.fracN >= minSamples {
		return p.fracSum / p.fracN * duration
	}
	return DefaultWatchFraction * duration
}

// Demand returns title's expected demand at now in bit/s: by Little's law
// the expected number of concurrent sessions is the request rate (req/s)
// times the mean session length (s, MeanSession), each taking bitrate
// bit/s.
func (p *Popularity) Demand(title string, bitrate int64, duration float64, now time.Time) float64 {
	r := p.Rate(title, now)
	if r == 0 || bitrate <= 0 {
		return 0
	}
	return r * p.MeanSession(title, duration, now) * float64(bitrate)
}

// rateAndDemand returns Rate and Demand of title at now with one lookup,
// and title's index in entries (-1 when it has no record).
func (p *Popularity) rateAndDemand(title string, bitrate int64, duration float64, now time.Time) (rate, demand float64, idx int32) {
	i, ok := p.index[title]
	if !ok {
		return 0, 0, -1
	}
	x := &p.entries[i].pop
	p.decay(x, now)
	rate = x.rate * math.Ln2 / p.halfLife().Seconds()
	if rate == 0 || bitrate <= 0 {
		return rate, 0, i
	}
	return rate, rate * p.meanSession(x, duration) * float64(bitrate), i
}

// each calls f with every title's record decayed to now, in no set order.
func (p *Popularity) each(now time.Time, f func(title string, x *pop)) {
	for i := range p.entries {
		e := &p.entries[i]
		p.decay(&e.pop, now)
		f(e.title, &e.pop)
	}
}

// has reports whether title has a record (a request, or a session end,
// not yet pruned).
func (p *Popularity) has(title string) bool {
	_, ok := p.index[title]
	return ok
}

// Titles returns the titles with any recorded request, sorted. The slice
// is shared until the next change: do not modify it.
func (p *Popularity) Titles() []string {
	switch {
	case p.sorted == nil:
		p.sorted = make([]string, 0, len(p.entries))
		for i := range p.entries {
			p.sorted = append(p.sorted, p.entries[i].title)
		}
		sort.Strings(p.sorted)
	case len(p.added) > 0:
		// Merge the titles created since: cheaper than sorting all again.
		sort.Strings(p.added)
		merged := make([]string, 0, len(p.sorted)+len(p.added))
		i, j := 0, 0
		for i < len(p.sorted) || j < len(p.added) {
			if j == len(p.added) || (i < len(p.sorted) && p.sorted[i] < p.added[j]) {
				merged = append(merged, p.sorted[i])
				i++
				continue
			}
			t := p.added[j]
			if _, ok := p.index[t]; ok && (len(merged) == 0 || merged[len(merged)-1] != t) { // not pruned since, once
				merged = append(merged, t)
			}
			j++
		}
		p.sorted = merged
	}
	p.added = p.added[:0]
	return p.sorted
}

// Len returns the number of titles tracked.
func (p *Popularity) Len() int { return len(p.entries) }

// Prune forgets titles whose decayed request count at now is below
// minWeight (a count of requests, e.g. 0.01), so the tracker stays as
// large as the recently requested catalog. It returns how many it dropped.
func (p *Popularity) Prune(minWeight float64, now time.Time) int {
	n := 0
	for i := 0; i < len(p.entries); {
		x := &p.entries[i]
		p.decay(&x.pop, now)
		if x.rate >= minWeight || x.watchN >= minWeight {
			i++
			continue
		}
		// Swap-remove: the last record takes this place.
		delete(p.index, x.title)
		last := len(p.entries) - 1
		if i != last {
			p.entries[i] = p.entries[last]
			p.index[p.entries[i].title] = int32(i)
		}
		p.entries[last] = popEntry{}
		p.entries = p.entries[:last]
		p.moveShares(last, i)
		n++
	}
	if n > 0 && p.sorted != nil {
		// Drop the pruned titles from the sorted list (a new slice: the
		// old one may still be read).
		kept := make([]string, 0, len(p.entries))
		for _, t := range p.sorted {
			if _, ok := p.index[t]; ok {
				kept = append(kept, t)
			}
		}
		p.sorted = kept
	}
	return n
}

// PopularityEntry is one title's state in a Snapshot.
type PopularityEntry struct {
	Title  string  `json:"title"`
	Count  int64   `json:"count"`  // requests seen
	Weight float64 `json:"weight"` // decayed request count at the snapshot's time
	// Sites are the viewers' sites' shares of Weight (ObserveSite), by
	// site; none when no request named a site.
	Sites []SiteShare `json:"sites,omitempty"`
	// WatchSum and WatchN are the title's ended sessions
	// (ObserveSession), decayed as Weight to the snapshot's time: the sum
	// of the seconds they lasted, and how many (MeanSession). None in a
	// snapshot of an earlier version: the mean is then learnt again.
	WatchSum float64 `json:"watch_sum,omitempty"`
	WatchN   float64 `json:"watch_n,omitempty"`
}

// SessionStats are a tracker's cluster-wide session statistics
// (ObserveSession), for a snapshot: FracSum, the decayed sum of the
// fractions of their titles' durations that sessions lasted (each in
// [0, 1]), FracN their decayed number, both as of At. MeanSession falls
// back on them for a title with too few sessions of its own.
type SessionStats struct {
	FracSum float64   `json:"frac_sum"`
	FracN   float64   `json:"frac_n"`
	At      time.Time `json:"at"`
}

// SessionStats returns the tracker's cluster-wide session statistics.
func (p *Popularity) SessionStats() SessionStats {
	return SessionStats{FracSum: p.fracSum, FracN: p.fracN, At: p.statsAt}
}

// RestoreSessionStats sets the tracker's cluster-wide session statistics
// (a SessionStats taken before a restart). It fails, changing nothing, on
// a negative or non-finite figure or a FracSum above FracN (a mean
// fraction above 1).
func (p *Popularity) RestoreSessionStats(s SessionStats) error {
	if err := s.check(); err != nil {
		return err
	}
	p.fracSum, p.fracN, p.statsAt = s.FracSum, s.FracN, s.At
	return nil
}

func (s SessionStats) check() error {
	if !finiteNonNeg(s.FracSum) || !finiteNonNeg(s.FracN) || s.FracSum > s.FracN*(1+1e-9) {
		return fmt.Errorf("smm: bad session statistics %+v", s)
	}
	return nil
}

// finiteNonNeg reports whether v is a finite number ≥ 0.
func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// Snapshot returns every title's state at now, sorted by title, for the
// manager to persist.
func (p *Popularity) Snapshot(now time.Time) []PopularityEntry {
	out := make([]PopularityEntry, 0, len(p.entries))
	for _, t := range p.Titles() {
		i := p.index[t]
		x := &p.entries[i].pop
		p.decay(x, now)
		out = append(out, PopularityEntry{Title: t, Count: x.count, Weight: x.rate, Sites: p.sharesOf(i),
			WatchSum: x.watchSum, WatchN: x.watchN})
	}
	return out
}

// Restore loads entries taken by Snapshot at time at (replacing the state
// of those titles, their site shares and session lengths included). It
// fails on an empty title, a negative or non-finite weight or session
// figure, or malformed site shares (an empty or repeated site, a share
// outside [0, 1], shares summing to more than 1 beyond rounding:
// shareSumSlack), and then changes nothing.
func (p *Popularity) Restore(entries []PopularityEntry, at time.Time) error {
	for _, e := range entries {
		if e.Title == "" || !finiteNonNeg(e.Weight) || e.Count < 0 || !finiteNonNeg(e.WatchSum) || !finiteNonNeg(e.WatchN) {
			return fmt.Errorf("smm: bad popularity entry %+v", e)
		}
		if err := checkShares(e.Sites); err != nil {
			return fmt.Errorf("title %q: %w", e.Title, err)
		}
	}
	if p.index == nil {
		p.index = map[string]int32{}
	}
	for _, e := range entries {
		rec := popEntry{title: e.Title, pop: pop{count: e.Count, rate: e.Weight, at: at, watchSum: e.WatchSum, watchN: e.WatchN}}
		i, ok := p.index[e.Title]
		if ok {
			p.entries[i] = rec
		} else {
			i = int32(len(p.entries))
			p.index[e.Title] = i
			p.entries = append(p.entries, rec)
			p.growShares()
		}
		if len(e.Sites) > 0 || p.shares != nil {
			p.setShares(i, e.Sites)
		}
	}
	p.sorted, p.added = nil, nil
	return nil
}

// Seed sets title's rate at now to rate requests per second (a prior, e.g.
// from an operator's list of new releases); the request count is kept. A
// rate raised counts as from no site: the sites' shares (ObserveSite)
// shrink in proportion. It fails on a negative or non-finite rate.
func (p *Popularity) Seed(title string, rate float64, now time.Time) error {
	if title == "" || !(rate >= 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("smm: bad seed %q rate %v", title, rate)
	}
	i, x := p.getAt(title, now)
	w := rate * p.halfLife().Seconds() / math.Ln2
	if p.shares != nil && w > x.rate {
		p.scaleShares(i, x.rate/w)
	}
	x.rate = w
	return nil
}
