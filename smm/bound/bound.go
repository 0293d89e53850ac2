package bound

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Request is one request of a trace, in the order the cache saw them.
type Request struct {
	Time  float64 // seconds since the start of the trace; non-decreasing
	Title string  // title id; non-empty
	Bytes int64   // the title's size, bytes; > 0
	// End is when the session stopped playing, seconds since the start
	// of the trace, >= Time; 0 (or Time) for an instant. Only Residency
	// reads it: the title stays cached over [Time, End).
	End float64
}

// Result is the bound for one trace and one cache size.
type Result struct {
	// Method is, for Compute, "min" when every title has the same size
	// (the bound is then Belady's MIN, which is optimal), else
	// "foo-l-dual": PFOO-L tightened by the Lagrangian dual of FOO's
	// interval LP (see dual.go); for Residency, "foo-r-dual", the same
	// with the residency rule (see residency.go).
	Method   string `json:"method"`
	Requests int    `json:"requests"`
	Capacity int64  `json:"capacity_bytes"`
	// TotalBytes is the sum of Bytes over all requests: the origin bytes
	// with no cache at all.
	TotalBytes int64 `json:"total_bytes"`
	// CompulsoryBytes and CompulsoryFetches count each title's first
	// request (absent from Options.Warm): no cache of any size avoids them.
	CompulsoryBytes   int64 `json:"compulsory_bytes"`
	CompulsoryFetches int   `json:"compulsory_fetches"`
	// OriginBytes is a lower bound on the bytes any policy fetches from
	// the origin for this trace with a cache of Capacity bytes.
	OriginBytes int64 `json:"origin_bytes"`
	// Fetches is a lower bound on the number of origin fetches (it is
	// computed on its own and need not belong to the same schedule as
	// OriginBytes).
	Fetches int `json:"fetches"`
	// PFOOLBytes is PFOO-L's bound alone on origin bytes (<= OriginBytes),
	// for reference; 0 with Method "min".
	PFOOLBytes int64 `json:"pfool_bytes,omitempty"`
	// UpperBytes and UpperFetches are those of a feasible offline
	// schedule, Belady's rule by next request with bypass (exactly MIN,
	// and equal to the bound, for equal sizes): the optimum lies between
	// OriginBytes and UpperBytes, which shows how tight the bound is.
	UpperBytes   int64 `json:"upper_bytes"`
	UpperFetches int   `json:"upper_fetches"`
	// StaticBytes is the origin bytes of the best fixed placement chosen
	// knowing each title's number of requests in the trace but not when
	// they come (titles by decreasing count while they fit). It is not a
	// bound: it is what perfect popularity knowledge gives without the
	// timing, the natural yardstick of a popularity-driven online policy.
	StaticBytes int64 `json:"static_bytes"`
	// BusyBytes (Residency only) is the origin bytes when nothing is kept
	// between sessions: one fetch per stretch of overlapping sessions of
	// a title (busy interval). It is below TotalBytes by what overlapping
	// sessions share.
	BusyBytes int64 `json:"busy_bytes,omitempty"`
	// PeakInUseBytes (Residency only) is the most bytes of titles with a
	// session in progress at one instant: the room the residency rule
	// takes from the cache at the busiest instant.
	PeakInUseBytes int64 `json:"peak_in_use_bytes,omitempty"`
}

// Options refine Compute.
type Options struct {
	// Warm lists titles on the cache before the first request (for
	// example disks pre-loaded at the start of a simulation); each
	// counts as requested just before the trace starts, without a fetch.
	// Their total size should not exceed the capacity.
	Warm []Request
	// AnyWarm lets the schedule start with any titles of the trace it
	// likes on the cache, free (every title counts as warm): the bound
	// for a trace measured after a warm-up, whatever the cache held then.
	AnyWarm bool
}

// withAnyWarm returns opt with every title of reqs warm when AnyWarm.
func (opt Options) withAnyWarm(reqs []Request) Options {
	if !opt.AnyWarm {
		return opt
	}
	seen := make(map[key]bool, 1024)
	warm := append([]Request(nil), opt.Warm...)
	for _, r := range reqs {
		if k := (key{r.Title, r.Bytes}); !seen[k] && r.Title != "" && r.Bytes > 0 {
			seen[k] = true
			warm = append(warm, Request{Title: r.Title, Bytes: r.Bytes})
		}
	}
	opt.Warm, opt.AnyWarm = warm, false
	return opt
}

// ErrBadTrace is returned for a malformed trace: an empty title, a size of
// zero or less, time going backwards or not finite, or a negative cache
// size.
var ErrBadTrace = errors.New("bound: bad trace")

type key struct {
	title string
	bytes int64
}

// trace is a validated trace with titles numbered: a title whose size
// changes counts as a new object.
type trace struct {
	obj     []int32 // object of each request
	size    []int64 // size of each object
	next    []int32 // index of the next request to the same object, -1 if none
	first   []bool  // first request of its object and not warm
	warmed  []int32 // objects warm at the start
	warmNxt []int32 // first request of each warm object, -1 if none
	time    []float64
	total   int64
	comp    int64
	compN   int
}

func build(reqs []Request, opt Options) (*trace, error) {
	ids := make(map[key]int32, 1024)
	t := &trace{
		obj:   make([]int32, len(reqs)),
		next:  make([]int32, len(reqs)),
		first: make([]bool, len(reqs)),
		time:  make([]float64, len(reqs)),
	}
	id := func(title string, bytes int64) int32 {
		k := key{title, bytes}
		o, ok := ids[k]
		if !ok {
			o = int32(len(t.size))
			ids[k] = o
			t.size = append(t.size, bytes)
		}
		return o
	}
	warm := map[int32]bool{}
	for _, w := range opt.Warm {
		if w.Title == "" || w.Bytes <= 0 {
			return nil, fmt.Errorf("%w: warm title %q of %d bytes", ErrBadTrace, w.Title, w.Bytes)
		}
		o := id(w.Title, w.Bytes)
		if !warm[o] {
			warm[o] = true
			t.warmed = append(t.warmed, o)
		}
	}
	seen := make([]bool, 0, 1024)
	prev := math.Inf(-1)
	for i, r := range reqs {
		if r.Title == "" || r.Bytes <= 0 {
			return nil, fmt.Errorf("%w: request %d: title %q of %d bytes", ErrBadTrace, i, r.Title, r.Bytes)
		}
		if math.IsNaN(r.Time) || math.IsInf(r.Time, 0) || r.Time < prev {
			return nil, fmt.Errorf("%w: request %d: time %v after %v", ErrBadTrace, i, r.Time, prev)
		}
		prev = r.Time
		if t.total > math.MaxInt64-r.Bytes {
			return nil, fmt.Errorf("%w: request %d: total bytes overflow", ErrBadTrace, i)
		}
		o := id(r.Title, r.Bytes)
		t.obj[i] = o
		t.time[i] = r.Time
		t.total += r.Bytes
		for int(o) >= len(seen) {
			seen = append(seen, false)
		}
		if !seen[o] {
			seen[o] = true
			if !warm[o] {
				t.first[i] = true
				t.comp += r.Bytes
				t.compN++
			}
		}
	}
	last := make([]int32, len(t.size))
	for i := range last {
		last[i] = -1
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		o := t.obj[i]
		t.next[i] = last[o]
		last[o] = int32(i)
	}
	t.warmNxt = make([]int32, len(t.warmed))
	for i, o := range t.warmed {
		t.warmNxt[i] = last[o]
	}
	return t, nil
}

// Compute returns lower bounds on the origin bytes and fetches of any
// policy serving reqs with a cache of capacity bytes. It fails with
// ErrBadTrace on a malformed trace or a negative capacity. It runs in
// O(n log n) time for n requests.
func Compute(reqs []Request, capacity int64, opt Options) (Result, error) {
	if capacity < 0 {
		return Result{}, fmt.Errorf("%w: capacity %d", ErrBadTrace, capacity)
	}
	t, err := build(reqs, opt.withAnyWarm(reqs))
	if err != nil {
		return Result{}, err
	}
	res := Result{
		Requests: len(reqs), Capacity: capacity, TotalBytes: t.total,
		CompulsoryBytes: t.comp, CompulsoryFetches: t.compN,
	}
	res.UpperFetches, res.UpperBytes = t.belady(capacity, false)
	res.StaticBytes = t.static(capacity)
	if _, ok := t.uniform(); ok {
		res.Method = "min"
		res.Fetches, res.OriginBytes = res.UpperFetches, res.UpperBytes
		return res, nil
	}
	res.Method = "foo-l-dual"
	res.OriginBytes, res.Fetches, res.PFOOLBytes = t.pfool(capacity, true)
	return res, nil
}

func (t *trace) uniform() (int64, bool) {
	if len(t.size) == 0 {
		return 1, true
	}
	for _, s := range t.size[1:] {
		if s != t.size[0] {
			return 0, false
		}
	}
	return t.size[0], true
}

// MIN returns the fetches and origin bytes of Belady's MIN with a cache
// of slots titles, whatever their sizes (a title is fetched when absent;
// MIN keeps the titles requested again soonest and does not keep a title
// requested later than everything it holds). For titles of equal size s it
// is optimal for a cache of slots*s bytes. It fails with ErrBadTrace on a
// malformed trace or negative slots.
func MIN(reqs []Request, slots int, opt Options) (fetches int, bytes int64, err error) {
	if slots < 0 {
		return 0, 0, fmt.Errorf("%w: %d slots", ErrBadTrace, slots)
	}
	t, err := build(reqs, opt.withAnyWarm(reqs))
	if err != nil {
		return 0, 0, err
	}
	fetches, bytes = t.belady(int64(slots), true)
	return fetches, bytes, nil
}

// PFOOL returns the PFOO-L lower bounds alone, whatever the sizes (for
// equal sizes they may lie below MIN, which is then exact). It fails with
// ErrBadTrace like Compute.
func PFOOL(reqs []Request, capacity int64, opt Options) (bytes int64, fetches int, err error) {
	if capacity < 0 {
		return 0, 0, fmt.Errorf("%w: capacity %d", ErrBadTrace, capacity)
	}
	t, err := build(reqs, opt.withAnyWarm(reqs))
	if err != nil {
		return 0, 0, err
	}
	bytes, fetches, _ = t.pfool(capacity, false)
	return bytes, fetches, nil
}

// interval is one reuse interval: the object stays cached from one request
// to its next, and the next request is a hit.
type interval struct {
	size  int64
	steps float64 // requests it spans (logical time)
	secs  float64 // seconds it spans (real time)
}

// pfool is PFOO-L: every reuse interval i of an object of size s, spanning
// l units of time, is a hit if the object stays cached, which costs s*l of
// the cache's capacity*duration budget. Cached bytes never exceed the
// capacity at any instant in a real schedule, so their sum over time never
// exceeds capacity times the trace's duration; maximising hits (or hit
// bytes) under that one aggregate constraint is a fractional knapsack,
// solved exactly by taking intervals in order of value per resource:
// shortest first for bytes (value s, resource s*l), smallest s*l first
// for fetches (value 1). Its optimum bounds every real schedule's. The
// budget holds in logical time (requests) and in seconds, so both are
// computed and the tighter bound kept. Intervals of titles larger than the
// cache are never hits.
func (t *trace) pfool(capacity int64, tighten bool) (bytes int64, fetches int, pfoolBytes int64) {
	n := len(t.obj)
	iv := make([]interval, 0, n)
	for i := range n {
		j := t.next[i]
		if j < 0 || t.size[t.obj[i]] > capacity {
			continue
		}
		iv = append(iv, interval{t.size[t.obj[i]], float64(int(j) - i), t.time[j] - t.time[i]})
	}
	steps := float64(max(n-1, 0))
	var span float64
	if n > 0 {
		span = t.time[n-1] - t.time[0]
	}
	for k, o := range t.warmed {
		if j := t.warmNxt[k]; j >= 0 && t.size[o] <= capacity {
			// Cached since just before the first request.
			iv = append(iv, interval{t.size[o], float64(j) + 1, t.time[j] - t.time[0]})
		}
	}
	if len(t.warmed) > 0 {
		steps++
	}
	c := float64(capacity)
	byteVal := func(x interval) float64 { return float64(x.size) }
	one := func(interval) float64 { return 1 }
	logical := func(x interval) float64 { return x.steps }
	seconds := func(x interval) float64 { return x.secs }
	saved, cutB := knapsack(iv, c*steps, logical, byteVal)
	hits, cutF := knapsack(iv, c*steps, logical, one)
	// Real time is only a useful measure when the trace has one.
	if span > 0 {
		s2, _ := knapsack(iv, c*span, seconds, byteVal)
		h2, _ := knapsack(iv, c*span, seconds, one)
		saved, hits = math.Min(saved, s2), math.Min(hits, h2)
	}
	pfBytes, pfFetches := t.round(saved, hits)
	if !tighten {
		return pfBytes, pfFetches, pfBytes
	}
	d := t.intervals(capacity)
	saved = math.Min(saved, d.dual(c, true, cutB))
	hits = math.Min(hits, d.dual(c, false, cutF))
	bytes, fetches = t.round(saved, hits)
	return max(bytes, pfBytes), max(fetches, pfFetches), pfBytes
}

// round turns an upper bound on saved bytes and hits into integer lower
// bounds on origin bytes and fetches. The slack absorbs float error so the
// result never rounds above the exact relaxation.
func (t *trace) round(saved, hits float64) (int64, int) {
	n := len(t.obj)
	bytes := int64(math.Ceil(float64(t.total) - saved - 1e-9*float64(t.total)))
	fetches := int(math.Ceil(float64(n) - hits - 1e-9*float64(n)))
	return max(bytes, t.comp), max(fetches, t.compN)
}

// knapsack returns the largest total value of intervals (fractions
// allowed) whose resource size*length fits in budget, and the value per
// resource at which it stopped (0 when everything fits). Intervals of zero
// length are free.
func knapsack(iv []interval, budget float64, length func(interval) float64, value func(interval) float64) (float64, float64) {
	type it struct{ res, val float64 }
	xs := make([]it, len(iv))
	for i, x := range iv {
		xs[i] = it{float64(x.size) * length(x), value(x)}
	}
	// Highest value per resource first; a free interval first of all.
	slices.SortFunc(xs, func(a, b it) int {
		l, r := a.val*b.res, b.val*a.res // a before b when a.val/a.res > b.val/b.res
		switch {
		case l > r:
			return -1
		case l < r:
			return 1
		}
		return 0
	})
	var got float64
	for _, x := range xs {
		if x.res <= budget {
			budget -= x.res
			got += x.val
			continue
		}
		if budget > 0 {
			got += x.val * budget / x.res
		}
		return got, x.val / x.res
	}
	return got, 0
}
