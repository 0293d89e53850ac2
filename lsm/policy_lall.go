package lsm

func init() {
	Register(DefaultPolicy, func(Config) Policy { return &LocalityLeastLoad{} })
}

// LocalityLeastLoad ("lall") is the default policy: among eligible nodes
// that hold or are filling the title and are not overloaded, the one with
// the least load (Scheduler.Load); when there is none, the least loaded
// eligible node of all, which then fills the title from the origin.
// Source: the ACM/LSM/SMM design of the seed documents, with the load
// formula L = Ns + a*Nd + b*max(0, U-Ul).
type LocalityLeastLoad struct{}

var _ Policy = (*LocalityLeastLoad)(nil)

// Name returns "lall".
func (*LocalityLeastLoad) Name() string { return DefaultPolicy }

// Pick implements Policy.
func (*LocalityLeastLoad) Pick(s *Scheduler, r *Request) int {
	best, bestLoad := -1, 0.0
	any, anyLoad := -1, 0.0
	for i, n := range s.Nodes {
		if !s.Eligible(i, r) {
			continue
		}
		l := s.Load(i)
		if any < 0 || l < anyLoad {
			any, anyLoad = i, l
		}
		if _, ok := n.titles[r.Title]; ok && !s.Overloaded(i) && (best < 0 || l < bestLoad) {
			best, bestLoad = i, l
		}
	}
	if best >= 0 {
		return best
	}
	return any
}
