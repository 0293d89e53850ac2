package lsm

func init() {
	Register("lc", func(Config) Policy { return LeastConnection{} })
	Register("wlc", func(Config) Policy { return WeightedLeastConnection{} })
	Register("sed", func(Config) Policy { return ShortestExpectedDelay{} })
	Register("nq", func(Config) Policy { return NeverQueue{} })
}

// LeastConnection ("lc", Linux IPVS ip_vs_lc) gives a new session to the
// eligible node with the fewest sessions, ignoring weights (but for 0)
// and locality; ties go to the lowest index.
type LeastConnection struct{}

var _ Policy = LeastConnection{}

// Name returns "lc".
func (LeastConnection) Name() string { return "lc" }

// Pick implements Policy.
func (LeastConnection) Pick(s *Scheduler, r *Request) int {
	best := -1
	for i, n := range s.Nodes {
		if (best < 0 || n.Sessions < s.Nodes[best].Sessions) && s.Eligible(i, r) {
			best = i
		}
	}
	return best
}

// leastPerWeight returns the eligible node with the least
// (Sessions+extra)/EffectiveWeight, ties to the lowest index; the rule of
// wlc (extra 0) and sed (extra 1).
func leastPerWeight(s *Scheduler, r *Request, extra int) int {
	best, bestV := -1, 0.0
	for i, n := range s.Nodes {
		if !s.Eligible(i, r) {
			continue
		}
		v := float64(n.Sessions+extra) / s.EffectiveWeight(i)
		if best < 0 || v < bestV {
			best, bestV = i, v
		}
	}
	return best
}

// WeightedLeastConnection ("wlc", Linux IPVS ip_vs_wlc, the IPVS default)
// gives a new session to the eligible node with the least sessions per
// unit of effective weight (Scheduler.EffectiveWeight).
type WeightedLeastConnection struct{}

var _ Policy = WeightedLeastConnection{}

// Name returns "wlc".
func (WeightedLeastConnection) Name() string { return "wlc" }

// Pick implements Policy.
func (WeightedLeastConnection) Pick(s *Scheduler, r *Request) int { return leastPerWeight(s, r, 0) }

// ShortestExpectedDelay ("sed", Linux IPVS ip_vs_sed) gives a new session
// to the eligible node with the least (sessions+1)/weight: the expected
// delay if it were served there.
type ShortestExpectedDelay struct{}

var _ Policy = ShortestExpectedDelay{}

// Name returns "sed".
func (ShortestExpectedDelay) Name() string { return "sed" }

// Pick implements Policy.
func (ShortestExpectedDelay) Pick(s *Scheduler, r *Request) int { return leastPerWeight(s, r, 1) }

// NeverQueue ("nq", Linux IPVS ip_vs_nq) gives a new session to the first
// eligible idle node (no sessions) and otherwise decides as sed.
type NeverQueue struct{}

var _ Policy = NeverQueue{}

// Name returns "nq".
func (NeverQueue) Name() string { return "nq" }

// Pick implements Policy.
func (NeverQueue) Pick(s *Scheduler, r *Request) int {
	for i, n := range s.Nodes {
		if n.Sessions == 0 && s.Eligible(i, r) {
			return i
		}
	}
	return leastPerWeight(s, r, 1)
}
