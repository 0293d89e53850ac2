package lsm

func init() {
	Register(DefaultPolicy, func(Config) Policy { return &LocalityLeastLoad{} })
}

// LocalityLeastLoad ("lall") is the default policy: locality-aware least
// load on the load formula. It places a session on the node whose load
// after taking it is least, where a node's load is the formula of
// Scheduler.Load over the sessions it already has (counting them once,
// Rs+Rd: a node busy filling other titles stays the natural home of the
// titles it holds) and the new session of b bit/s adds b/E on a node that
// holds the title or already fills it (the session shares that fill), and
// (1+A)*b/E on a node that must fill it from the origin: the seed's a, the
// weight of a session served from a fill (E the node's weighted
// capacity), plus Config.DiskPressure times the share of the node's disk
// in use. So a title stays on the nodes that hold it until they are about
// A sessions' worth busier than the node where a fill costs least, or
// above their overload threshold (Scheduler.Overloaded); then it gains a
// replica there. Source: the ACM/LSM/SMM design of the seed documents,
// with the load formula L = Ns + a*Nd + b*max(0, U-Ul); the sticky
// least-load rule is that of locality-aware request distribution (Pai et
// al., ASPLOS 1998).
//
// A decision costs O(replicas of the title) plus O(1) for the node where a
// fill costs least, which the scheduler keeps in a tournament tree (for a
// 4 Mbit/s session); it scans all nodes only when that node cannot take r
// (no bit/s or disk headroom, or slow start).
type LocalityLeastLoad struct{}

var _ Policy = (*LocalityLeastLoad)(nil)

// Name returns "lall".
func (*LocalityLeastLoad) Name() string { return DefaultPolicy }

// Pick implements Policy.
func (*LocalityLeastLoad) Pick(s *Scheduler, r *Request) int {
	b := float64(r.Bitrate)
	best, bestCost := -1, 0.0
	for _, h := range s.holders[r.Title] {
		i := int(h)
		if !s.Eligible(i, r) || s.Overloaded(i) {
			continue
		}
		c := s.loadWith(i, 1) + b/weighted(s.Nodes[i])
		if best < 0 || c < bestCost {
			best, bestCost = i, c
		}
	}
	f := s.fillCost.min()
	if f >= 0 && !s.Eligible(f, r) {
		f = s.cheapestFill(r)
	}
	if f < 0 {
		return best
	}
	if best >= 0 && bestCost <= s.loadWith(f, 1)+(1+s.Config.A)*b/weighted(s.Nodes[f])+s.diskTerm(s.Nodes[f]) {
		return best
	}
	return f
}

// cheapestFill scans every node for the eligible one with the least cost
// of a fill in the tree.
func (s *Scheduler) cheapestFill(r *Request) int {
	best, bestCost := -1, 0.0
	leaves := s.fillCost.val[s.fillCost.size:]
	for i := range s.Nodes {
		c := leaves[i]
		if (best < 0 || c < bestCost) && s.Eligible(i, r) {
			best, bestCost = i, c
		}
	}
	return best
}
