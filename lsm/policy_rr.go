package lsm

func init() {
	Register("rr", func(Config) Policy { return &RoundRobin{} })
}

// RoundRobin ("rr", as in Linux IPVS) gives each new session to the next
// eligible node in turn, ignoring load and locality.
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
