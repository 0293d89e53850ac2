package lsm

func init() {
	Register("twos", func(c Config) Policy { return &TwoChoices{state: c.Seed} })
}

// TwoChoices ("twos", Linux IPVS ip_vs_twos: weighted random twos choice)
// draws two eligible nodes at random, each with probability proportional
// to its effective weight, and gives the session to the one with fewer
// sessions per weight. Source: Mitzenmacher, "The Power of Two Choices in
// Randomized Load Balancing", IEEE TPDS 2001. The random stream is
// splitmix64 seeded with Config.Seed, so runs repeat.
type TwoChoices struct {
	state uint64
}

var _ Policy = (*TwoChoices)(nil)

// Name returns "twos".
func (*TwoChoices) Name() string { return "twos" }

func (p *TwoChoices) rand() uint64 {
	p.state += 0x9e3779b97f4a7c15
	return mix64(p.state)
}

// Pick implements Policy.
func (p *TwoChoices) Pick(s *Scheduler, r *Request) int {
	total := 0.0
	for i := range s.Nodes {
		if s.Eligible(i, r) {
			total += s.EffectiveWeight(i)
		}
	}
	if total <= 0 {
		return -1
	}
	w1 := float64(p.rand()>>11) / (1 << 53) * total
	w2 := float64(p.rand()>>11) / (1 << 53) * total
	c1, c2, last := -1, -1, -1
	acc := 0.0
	for i := range s.Nodes {
		if !s.Eligible(i, r) {
			continue
		}
		acc += s.EffectiveWeight(i)
		last = i
		if c1 < 0 && w1 < acc {
			c1 = i
		}
		if c2 < 0 && w2 < acc {
			c2 = i
		}
		if c1 >= 0 && c2 >= 0 {
			break
		}
	}
	if c1 < 0 {
		c1 = last
	}
	if c2 < 0 {
		c2 = last
	}
	l1 := float64(s.Nodes[c1].Sessions) * s.EffectiveWeight(c2)
	l2 := float64(s.Nodes[c2].Sessions) * s.EffectiveWeight(c1)
	if l2 < l1 {
		return c2
	}
	return c1
}
