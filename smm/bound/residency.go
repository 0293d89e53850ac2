package bound

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// The residency rule. A VOD node streams a title from its own disk for the
// whole session, so whatever the policy, the title of request i is on the
// disk from the request (Time) to the end of the session (End): a fill is
// cached while it streams. Taken as one cache of C bytes, the cluster must
// therefore hold, at every instant, every title with a session in
// progress; sessions of one title that overlap share one copy.
//
// For each title (object) of size s, merge its requests' intervals
// [Time, End) into maximal busy intervals B_1, B_2, ... (half-open; two
// that touch are one). A schedule is a cache content over time. It is
// valid when every object is cached throughout each of its busy intervals
// and the cached bytes never exceed C. Its cost is s for every entry of an
// object into the cache. Between two consecutive busy intervals B_k and
// B_{k+1} of an object lies a gap G = [end B_k, start B_{k+1}) (and, for a
// warm object, one from the start of the trace to B_1). Then:
//
//	cost >= sum over busy intervals of s  -  sum over gaps kept whole of s
//
// because an object not cached at some instant of the gap before B_{k+1}
// must enter the cache again within that gap (gaps of one object are
// disjoint, so these entries are distinct), and B_1 of an object that is
// not warm needs an entry of its own. With x_G = 1 for the gaps kept whole
// and 0 otherwise, at every instant t the cached bytes are at least the
// bytes of the busy intervals covering t, F(t), plus the sizes of the
// kept gaps covering t, so
//
//	sum over gaps G covering t of s_G x_G  <=  C - F(t)      for every t.
//
// That x is feasible for the LP "maximise sum s_G x_G subject to those
// constraints and 0 <= x <= 1" (FOO's interval LP, Berger et al. 2018,
// with forced intervals taking F(t) of the capacity), so the LP optimum
// bounds the bytes any valid schedule saves, and busy bytes minus it
// bounds any schedule's cost from below. F and the gaps covering t are
// constant between two consecutive endpoints of busy intervals, so one
// constraint per such elementary segment is the whole LP. Every bound
// below is an upper bound on this LP's optimum, hence valid:
//
//   - PFOO-L: the sum of the constraints weighted by w_j >= 0 (1 per
//     segment, or its length in seconds) is one knapsack constraint,
//     sum_G s_G (sum of w over G) x_G <= sum_j w_j (C - F_j), and its
//     fractional knapsack optimum is at least the LP's, since every x
//     feasible for the LP satisfies it;
//   - the Lagrangian dual: for any multipliers lambda_j >= 0,
//     D(lambda) = sum_j lambda_j (C - F_j) + sum_G max(0, v_G - s_G
//     Lambda_G), with Lambda_G the sum of lambda over the segments G
//     covers, is at least the LP's optimum by weak duality (for feasible
//     x, sum_G v_G x_G <= sum_G (v_G - s_G Lambda_G) x_G + sum_j lambda_j
//     (C - F_j) <= D(lambda)). The knapsack above is D at lambda_j = its
//     cut-off price times w_j; the subgradient search only looks for lower
//     values of D, and the minimum of several valid bounds is valid.
//
// The same holds with value 1 per gap for the number of fetches. When a
// request is an instant (End = Time), busy intervals are empty and the
// model is the instant one of Compute.

// ErrInfeasible is returned by Residency when the sessions in progress at
// some instant need more bytes than the capacity: no schedule serves the
// trace, so there is nothing to bound.
var ErrInfeasible = errors.New("bound: sessions in progress need more than the capacity")

// rgap is a keepable gap of an object between two busy intervals, in
// elementary segment coordinates: it covers segments lo .. hi-1.
type rgap struct {
	lo, hi int32
	size   int64
}

// rbusy is one busy interval of an object.
type rbusy struct {
	obj  int32
	a, b float64 // [a, b)
}

// rtrace is a validated trace under the residency rule.
type rtrace struct {
	size      []int64   // per object
	warm      []bool    // per object
	busy      []rbusy   // by object, then time
	times     []float64 // distinct endpoints; segment j = [times[j], times[j+1])
	forced    []float64 // bytes of busy intervals covering segment j
	gaps      []rgap    // gaps of objects no larger than the capacity
	busyBytes int64
	total     int64
	comp      int64
	compN     int
	peak      float64 // largest forced bytes
	peakAt    float64
}

// end returns the end of r's residency interval; an error when End is
// set below Time or not finite.
func end(r Request) (float64, error) {
	switch {
	case r.End == 0 || r.End == r.Time:
		return r.Time, nil
	case math.IsNaN(r.End) || math.IsInf(r.End, 0) || r.End < r.Time:
		return 0, fmt.Errorf("end %v before time %v", r.End, r.Time)
	}
	return r.End, nil
}

func buildResidency(reqs []Request, capacity int64, opt Options) (*rtrace, error) {
	t := &rtrace{}
	ids := make(map[key]int32, 1024)
	id := func(title string, bytes int64) int32 {
		k := key{title, bytes}
		o, ok := ids[k]
		if !ok {
			o = int32(len(t.size))
			ids[k] = o
			t.size = append(t.size, bytes)
			t.warm = append(t.warm, false)
		}
		return o
	}
	for _, w := range opt.Warm {
		if w.Title == "" || w.Bytes <= 0 {
			return nil, fmt.Errorf("%w: warm title %q of %d bytes", ErrBadTrace, w.Title, w.Bytes)
		}
		t.warm[id(w.Title, w.Bytes)] = true
	}
	// Per object, the busy interval being built.
	type open struct {
		a, b float64
		ok   bool
	}
	var cur []open
	var all []rbusy
	prev := math.Inf(-1)
	t0 := math.Inf(1)
	for i, r := range reqs {
		if r.Title == "" || r.Bytes <= 0 {
			return nil, fmt.Errorf("%w: request %d: title %q of %d bytes", ErrBadTrace, i, r.Title, r.Bytes)
		}
		if math.IsNaN(r.Time) || math.IsInf(r.Time, 0) || r.Time < prev {
			return nil, fmt.Errorf("%w: request %d: time %v after %v", ErrBadTrace, i, r.Time, prev)
		}
		e, err := end(r)
		if err != nil {
			return nil, fmt.Errorf("%w: request %d: %v", ErrBadTrace, i, err)
		}
		prev = r.Time
		t0 = min(t0, r.Time)
		if t.total > math.MaxInt64-r.Bytes {
			return nil, fmt.Errorf("%w: request %d: total bytes overflow", ErrBadTrace, i)
		}
		t.total += r.Bytes
		o := id(r.Title, r.Bytes)
		for int(o) >= len(cur) {
			cur = append(cur, open{})
		}
		c := &cur[o]
		switch {
		case c.ok && r.Time <= c.b:
			c.b = max(c.b, e)
		default:
			if c.ok {
				all = append(all, rbusy{o, c.a, c.b})
			}
			*c = open{r.Time, e, true}
		}
	}
	for o, c := range cur {
		if c.ok {
			all = append(all, rbusy{int32(o), c.a, c.b})
		}
	}
	slices.SortFunc(all, func(x, y rbusy) int {
		if x.obj != y.obj {
			return cmp.Compare(x.obj, y.obj)
		}
		return cmp.Compare(x.a, y.a)
	})
	t.busy = all
	if len(all) == 0 {
		return t, nil
	}
	t.times = make([]float64, 0, 2*len(all)+1)
	t.times = append(t.times, t0)
	for _, b := range all {
		t.times = append(t.times, b.a, b.b)
	}
	slices.Sort(t.times)
	t.times = slices.Compact(t.times)
	idx := func(x float64) int32 {
		i, _ := slices.BinarySearch(t.times, x)
		return int32(i)
	}
	nseg := len(t.times) - 1
	diff := make([]float64, nseg+1)
	for k, b := range all {
		s := t.size[b.obj]
		t.busyBytes += s
		first := k == 0 || all[k-1].obj != b.obj
		if first && !t.warm[b.obj] {
			t.comp += s
			t.compN++
		}
		ia, ib := idx(b.a), idx(b.b)
		diff[ia] += float64(s)
		diff[ib] -= float64(s)
		if s > capacity {
			continue // never kept: its gaps cannot be
		}
		switch {
		case !first:
			t.gaps = append(t.gaps, rgap{idx(all[k-1].b), ia, s})
		case t.warm[b.obj]:
			t.gaps = append(t.gaps, rgap{0, ia, s})
		}
	}
	t.forced = make([]float64, nseg)
	var run float64
	for j := range t.forced {
		run += diff[j]
		t.forced[j] = run
		if run > t.peak {
			t.peak, t.peakAt = run, t.times[j]
		}
	}
	// Forced bytes are sums of integers below 2^53 in practice; allow for
	// float error only.
	if t.peak > float64(capacity)*(1+1e-12) {
		return nil, fmt.Errorf("%w: %.0f bytes in use at %.3f s, capacity %d", ErrInfeasible, t.peak, t.peakAt, capacity)
	}
	return t, nil
}

// Residency returns lower bounds on the origin bytes and fetches of any
// policy serving reqs with a cache of capacity bytes under the residency
// rule: each request's title stays cached from its Time to its End (see
// the proof above; an End of 0 or equal to Time is an instant request).
// Method is "foo-r-dual": FOO's interval LP with forced intervals, bounded
// by PFOO-L (PFOOLBytes) and tightened by its Lagrangian dual
// (OriginBytes). UpperBytes is a feasible schedule under the same rule
// (Belady's rule: when room is needed, evict the cached title not in use
// whose next session starts last); StaticBytes is a fixed set of titles
// chosen by their number of busy intervals, kept in the room the busiest
// instant leaves. It fails with ErrBadTrace on a malformed trace (also an
// End before Time) or a negative capacity, and with ErrInfeasible when
// the sessions in progress at some instant need more than capacity bytes.
// It runs in O(n log n) time for n requests.
func Residency(reqs []Request, capacity int64, opt Options) (Result, error) {
	if capacity < 0 {
		return Result{}, fmt.Errorf("%w: capacity %d", ErrBadTrace, capacity)
	}
	t, err := buildResidency(reqs, capacity, opt.withAnyWarm(reqs))
	if err != nil {
		return Result{}, err
	}
	res := Result{
		Method: "foo-r-dual", Requests: len(reqs), Capacity: capacity, TotalBytes: t.total,
		CompulsoryBytes: t.comp, CompulsoryFetches: t.compN,
		BusyBytes: t.busyBytes, PeakInUseBytes: int64(math.Round(t.peak)),
	}
	if len(t.busy) == 0 {
		return res, nil
	}
	res.UpperFetches, res.UpperBytes, err = t.upper(capacity)
	if err != nil {
		return Result{}, err
	}
	res.StaticBytes = t.static(capacity)
	res.OriginBytes, res.Fetches, res.PFOOLBytes = t.lower(capacity)
	return res, nil
}

// lower computes the bounds: PFOO-L in segments and in seconds, then the
// dual from each, keeping the lowest savings.
func (t *rtrace) lower(capacity int64) (bytes int64, fetches int, pfool int64) {
	c := float64(capacity)
	nseg := len(t.forced)
	free := make([]float64, nseg)
	for j, f := range t.forced {
		free[j] = math.Max(0, c-f)
	}
	wSeg := make([]float64, nseg+1)
	wSec := make([]float64, nseg+1)
	var budSeg, budSec float64
	for j := range nseg {
		d := t.times[j+1] - t.times[j]
		wSeg[j+1] = wSeg[j] + 1
		wSec[j+1] = wSec[j] + d
		budSeg += free[j]
		budSec += d * free[j]
	}
	iv := make([]interval, len(t.gaps))
	d := dualIntervals{ngaps: nseg, free: free,
		lo: make([]int32, len(t.gaps)), hi: make([]int32, len(t.gaps)), size: make([]float64, len(t.gaps))}
	for k, g := range t.gaps {
		iv[k] = interval{size: g.size, steps: float64(g.hi - g.lo), secs: t.times[g.hi] - t.times[g.lo]}
		d.lo[k], d.hi[k], d.size[k] = g.lo, g.hi, float64(g.size)
	}
	byteVal := func(x interval) float64 { return float64(x.size) }
	one := func(interval) float64 { return 1 }
	steps := func(x interval) float64 { return x.steps }
	secs := func(x interval) float64 { return x.secs }
	savedSeg, cutBSeg := knapsack(iv, budSeg, steps, byteVal)
	hitsSeg, cutFSeg := knapsack(iv, budSeg, steps, one)
	savedSec, cutBSec := knapsack(iv, budSec, secs, byteVal)
	hitsSec, cutFSec := knapsack(iv, budSec, secs, one)
	saved := math.Min(savedSeg, savedSec)
	hits := math.Min(hitsSeg, hitsSec)
	pfool, _ = t.round(saved, hits)
	d.W = wSeg
	saved = math.Min(saved, d.dual(c, true, cutBSeg))
	hits = math.Min(hits, d.dual(c, false, cutFSeg))
	d.W = wSec
	saved = math.Min(saved, d.dual(c, true, cutBSec))
	hits = math.Min(hits, d.dual(c, false, cutFSec))
	bytes, fetches = t.round(saved, hits)
	return max(bytes, pfool), fetches, pfool
}

// round turns upper bounds on saved bytes and on hits (gaps kept) into
// integer lower bounds on origin bytes and fetches, with a slack for float
// error so the result never rounds above the exact relaxation.
func (t *rtrace) round(saved, hits float64) (int64, int) {
	n := len(t.busy)
	bytes := int64(math.Ceil(float64(t.busyBytes) - saved - 1e-9*float64(t.busyBytes)))
	fetches := int(math.Ceil(float64(n) - hits - 1e-9*float64(n)))
	return max(bytes, t.comp), max(fetches, t.compN)
}
