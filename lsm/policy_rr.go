package lsm

func init() {
	Register("rr", func(Config) Policy { return &RoundRobin{} })
	Register("wrr", func(Config) Policy { return &WeightedRoundRobin{} })
}

// RoundRobin ("rr", as in Linux IPVS ip_vs_rr) gives each new session to
// the next eligible node in turn, ignoring weights (but for 0: drained),
// load and locality.
type RoundRobin struct {
	next int
}

var _ Policy = (*RoundRobin)(nil)

// Name returns "rr".
func (*RoundRobin) Name() string { return "rr" }

// Pick implements Policy.
func (p *RoundRobin) Pick(s *Scheduler, r *Request) int {
	n := len(s.Nodes)
	for k := 0; k < n; k++ {
		i := (p.next + k) % n
		if s.Eligible(i, r) {
			p.next = i + 1
			return i
		}
	}
	return -1
}

// WeightedRoundRobin ("wrr", Linux IPVS ip_vs_wrr) gives each eligible
// node a share of new sessions proportional to its effective weight
// (Scheduler.EffectiveWeight: announced capacity times Weight/100, ramped
// during slow start). The turns are interleaved by the smooth weighted
// round robin of nginx (each pick adds every node's weight to its credit,
// takes the node with the most credit and subtracts the total), which
// gives IPVS's shares without its bursts.
type WeightedRoundRobin struct {
	credit []float64
}

var _ Policy = (*WeightedRoundRobin)(nil)

// Name returns "wrr".
func (*WeightedRoundRobin) Name() string { return "wrr" }

// Pick implements Policy.
func (p *WeightedRoundRobin) Pick(s *Scheduler, r *Request) int {
	for len(p.credit) < len(s.Nodes) {
		p.credit = append(p.credit, 0)
	}
	best, total := -1, 0.0
	for i := range s.Nodes {
		if !s.Eligible(i, r) {
			continue
		}
		w := s.EffectiveWeight(i)
		total += w
		p.credit[i] += w
		if best < 0 || p.credit[i] > p.credit[best] {
			best = i
		}
	}
	if best >= 0 {
		p.credit[best] -= total
	}
	return best
}
