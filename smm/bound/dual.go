package bound

import "math"

// The interval LP behind FOO (Berger et al. 2018): a variable x_i in
// [0, 1] per reuse interval i (the share of the interval during which the
// object stays cached, so that its next request is a hit), maximising the
// saved value sum v_i x_i subject to the cache size at every gap between
// two requests: sum over intervals covering gap t of s_i x_i <= C. Its
// optimum bounds every real schedule's saving (FOO-L). PFOO-L keeps only
// the sum of those constraints over all gaps.
//
// Any multipliers lambda_t >= 0 give an upper bound on the LP's optimum by
// weak duality:
//
//	D(lambda) = C * sum_t lambda_t + sum_i max(0, v_i - s_i * Lambda_i)
//
// where Lambda_i is the sum of lambda over the gaps interval i covers. The
// bound is valid whatever the multipliers; better multipliers only make it
// tighter. dual starts from PFOO-L's (one price for all gaps, which gives
// exactly PFOO-L's value) and lowers D by projected subgradient steps on a
// price per segment of the trace, keeping the lowest D seen.

// Tuning of the dual's search. On a 100,000-request Zipf trace, 60 steps
// reach all but 0.3% of the tightening 240 steps give; the number of
// segments barely matters beyond a few hundred.
const (
	dualSegments   = 1024 // segments of the trace with a price each (<= 65536)
	dualIterations = 60
	dualDecay      = 0.97 // step size factor per iteration
)

// dualIntervals are the reuse intervals in gap coordinates: interval k
// covers gaps lo[k] .. hi[k]-1 of ngaps. Gap g has weight w(g) (the
// multiplier of its constraint is a segment's price times w(g)) and free
// capacity free[g] bytes; W is the prefix sum of the weights (W[g] = the
// sum of w over gaps before g). Nil free means capacity everywhere; nil W
// means unit weights.
type dualIntervals struct {
	lo, hi []int32
	size   []float64
	ngaps  int
	free   []float64
	W      []float64
}

// weight returns the sum of the gap weights over gaps [a, b).
func (d *dualIntervals) weight(a, b int32) float64 {
	if d.W == nil {
		return float64(b - a)
	}
	return d.W[b] - d.W[a]
}

func (t *trace) intervals(capacity int64) dualIntervals {
	var d dualIntervals
	off := int32(0)
	if len(t.warmed) > 0 {
		off = 1 // gap 0 is before the first request
	}
	n := len(t.obj)
	d.ngaps = max(n-1, 0) + int(off)
	for i := range n {
		j := t.next[i]
		if j < 0 || t.size[t.obj[i]] > capacity {
			continue
		}
		d.lo = append(d.lo, int32(i)+off)
		d.hi = append(d.hi, j+off)
		d.size = append(d.size, float64(t.size[t.obj[i]]))
	}
	for k, o := range t.warmed {
		if j := t.warmNxt[k]; j >= 0 && t.size[o] <= capacity {
			d.lo = append(d.lo, 0)
			d.hi = append(d.hi, j+off)
			d.size = append(d.size, float64(t.size[o]))
		}
	}
	return d
}

// dual returns an upper bound on the value the interval LP can save with a
// cache of capacity bytes (free[g] bytes at gap g when free is set): bytes when byBytes (v_i = s_i), else hits
// (v_i = 1). lambda0 is PFOO-L's price per byte and gap (its value/
// resource cut-off), the starting point. Prices are constant over each of
// up to dualSegments segments of the gaps, so every pass reads the
// intervals in order and touches only per-segment arrays.
func (d *dualIntervals) dual(capacity float64, byBytes bool, lambda0 float64) float64 {
	if d.ngaps == 0 || len(d.lo) == 0 {
		return d.all(byBytes)
	}
	k := min(dualSegments, d.ngaps)
	start := make([]int32, k+1) // first gap of each segment
	for s := range start {
		start[s] = int32((int64(s)*int64(d.ngaps) + int64(k) - 1) / int64(k))
	}
	segOf := func(g int32) int {
		s := int(int64(g) * int64(k) / int64(d.ngaps))
		return min(s, k-1)
	}
	sLo := make([]uint16, len(d.lo))
	sHi := make([]uint16, len(d.lo))
	// Weight an interval covers in its first and last segment (wA alone
	// when both are one), constant over the iterations.
	wA := make([]float64, len(d.lo))
	wB := make([]float64, len(d.lo))
	for i := range d.lo {
		lo, hi := d.lo[i], d.hi[i]
		if hi <= lo {
			continue // covers no gap: free, saved whatever the prices
		}
		a, b := segOf(lo), segOf(hi-1) // b: the segment of the last gap covered
		sLo[i], sHi[i] = uint16(a), uint16(b)
		if a == b {
			wA[i] = d.weight(lo, hi)
		} else {
			wA[i], wB[i] = d.weight(lo, start[a+1]), d.weight(start[b], hi)
		}
	}
	segLen := make([]float64, k) // weight of each segment
	segCap := make([]float64, k) // weighted free capacity of each segment
	for s := range segLen {
		segLen[s] = d.weight(start[s], start[s+1])
		if d.free == nil {
			segCap[s] = capacity * segLen[s]
			continue
		}
		for g := start[s]; g < start[s+1]; g++ {
			segCap[s] += d.weight(g, g+1) * d.free[g]
		}
	}
	lam := make([]float64, k)
	for i := range lam {
		lam[i] = lambda0
	}
	ps := make([]float64, k+1)   // price summed over whole segments before s
	full := make([]float64, k+1) // difference array of sizes over whole segments
	part := make([]float64, k)   // byte-gaps in partly covered segments
	segOcc := make([]float64, k) // byte-gaps of the taken intervals per segment
	best := d.all(byBytes)
	eta := 1.0
	for it := 0; it < dualIterations; it++ {
		var val float64
		for s, l := range lam {
			ps[s+1] = ps[s] + l*segLen[s]
			val += l * segCap[s]
		}
		clear(full)
		clear(part)
		for i, lo := range d.lo {
			hi := d.hi[i]
			if hi <= lo {
				if byBytes {
					val += d.size[i]
				} else {
					val++
				}
				continue
			}
			a, b := int(sLo[i]), int(sHi[i])
			var L float64
			if a == b {
				L = wA[i] * lam[a]
			} else {
				L = wA[i]*lam[a] + (ps[b] - ps[a+1]) + wB[i]*lam[b]
			}
			s := d.size[i]
			var gain float64
			if byBytes {
				gain = s * (1 - L)
			} else {
				gain = 1 - s*L
			}
			if gain <= 0 {
				continue
			}
			val += gain
			if a == b {
				part[a] += s * wA[i]
				continue
			}
			part[a] += s * wA[i]
			part[b] += s * wB[i]
			full[a+1] += s
			full[b] -= s
		}
		best = math.Min(best, val)
		// Subgradient of D per segment: capacity minus the occupancy of
		// the intervals D takes, summed over the segment's gaps.
		var run float64
		for s := range segOcc {
			run += full[s]
			segOcc[s] = run*segLen[s] + part[s]
		}
		// Multiplicative steps: a segment over capacity gets a higher
		// price, one under capacity a lower one.
		for s := range lam {
			var u float64 // > 0: over capacity
			switch {
			case segCap[s] > 0:
				u = math.Max(-1, math.Min(1, segOcc[s]/segCap[s]-1))
			case segOcc[s] > 0:
				u = 1
			default:
				u = -1
			}
			lam[s] = math.Max(lam[s]*math.Exp(eta*u), 1e-300)
		}
		eta *= dualDecay
	}
	return best
}

// all is the value saved when every interval is a hit (an infinite cache).
func (d *dualIntervals) all(byBytes bool) float64 {
	if !byBytes {
		return float64(len(d.lo))
	}
	var v float64
	for _, s := range d.size {
		v += s
	}
	return v
}
