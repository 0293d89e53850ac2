package lsm

func init() {
	Register(DefaultPolicy, func(Config) Policy { return &LocalityLeastLoad{} })
}

// LocalityLeastLoad ("lall") is the default policy: locality-aware least
// load on the load formula. It places a session of b bit/s on the node
// whose cost of taking it is least, where a node's load is the formula of
// Scheduler.Load over the sessions it already has, counting them once
// (Rs+Rd: a node busy filling other titles stays the natural home of the
// titles it holds), and
//
//   - on a node that holds the title or already fills it (the session
//     shares that fill) the session adds b/E, E the node's weighted
//     capacity;
//   - on a node that must fill it from the origin it adds b/E plus the
//     fill charge A*Config.FillRefBps/Ē (Ē the mean E of the nodes in
//     service: A reference sessions, the seed's a, at the cluster's mean
//     capacity) plus Config.DiskPressure times the share of the node's
//     disk in use; on a node that keeps a partial of the title (Partial:
//     the beginning of a fill cut short, which its next fill resumes) the
//     fill charge is scaled by the share of the title's bytes missing
//     there, what the origin still has to send.
//
// The fill charge is the same on every node and for every title: what a
// fill costs is the origin transfer and the churn of a disk, not the
// node's egress, and measured on the simulator (docs/scheduling.md) a
// charge scaled by the title's bitrate, or divided by each node's own
// capacity, fetched 1-9% more from the origin and balanced worse.
//
// So a title stays on the nodes that hold it until they are about A
// reference sessions' worth busier than the node where a fill costs
// least, then gains a replica there. Holders above their overload
// threshold (Scheduler.Overloaded) are passed over while another holder
// can take the session; when none can, they compete with the fill by the
// formula, whose overload penalty B/Ul*(U-Ul) is there for that, so that
// at the peak, with every node hot, a session does not need a fill its
// holder could have spared. When the origin has no free channel (the
// fills on alive nodes, LiveFilling, reach Config.OriginChannels: a dead
// node's fills hold none) a holder with headroom takes the session
// whatever its load. Source: the ACM/LSM/SMM design of the seed
// documents, with the load formula L = Ns + a*Nd + b*max(0, U-Ul); the
// sticky least-load rule is that of locality-aware request distribution
// (Pai et al., ASPLOS 1998).
//
// A decision costs O(replicas of the title) plus a search of the
// scheduler's fill tree, O(log n) nodes in the usual case (see fillTree),
// plus O(nodes with a partial of the title).
type LocalityLeastLoad struct{}

var _ Policy = (*LocalityLeastLoad)(nil)

// Name returns "lall".
func (*LocalityLeastLoad) Name() string { return DefaultPolicy }

// Pick implements Policy.
func (*LocalityLeastLoad) Pick(s *Scheduler, r *Request) int {
	b := float64(r.Bitrate)
	cool, coolCost := -1, 0.0 // holders at or below their overload threshold
	hot, hotCost := -1, 0.0   // holders above it
	for _, h := range s.holders[r.Title] {
		i := int(h)
		if !s.Eligible(i, r) {
			continue
		}
		c := s.loadWith(i, 1) + b/weightedBps(s.Nodes[i])
		if s.Overloaded(i) {
			if hot < 0 || c < hotCost {
				hot, hotCost = i, c
			}
		} else if cool < 0 || c < coolCost {
			cool, coolCost = i, c
		}
	}
	best, bestCost := cool, coolCost
	if best < 0 {
		best, bestCost = hot, hotCost
	}
	if best >= 0 && s.originChannelsFull() {
		return best // a fill would wait for an origin channel
	}
	// A node with a partial of the title is charged only for the share
	// missing there: it may beat the cheapest fill elsewhere.
	p, partialCost := s.cheapestPartial(r)
	f, fillCost := s.cheapestFill(r, false)
	if _, held := s.holds(f, r.Title); held {
		// The cheapest node holds the title: every fill costs at least
		// as much, plus the charge. Only when the best holder costs more
		// than that (an overloaded cheapest holder, a cool one dearer),
		// or than a fill on a node with a partial, is a node without the
		// title needed.
		if bestCost <= fillCost+s.fillCharge() && (p < 0 || bestCost <= partialCost) {
			return best
		}
		f, fillCost = s.cheapestFill(r, true)
	}
	if f >= 0 {
		fillCost += s.fillCharge()
	}
	if p >= 0 && (f < 0 || partialCost < fillCost) {
		f, fillCost = p, partialCost
	}
	if f < 0 {
		return best
	}
	if best >= 0 && bestCost <= fillCost {
		return best
	}
	return f
}

// fillCharge is the default policy's charge for a new fill, in load
// units: A reference sessions at the mean weighted capacity.
func (s *Scheduler) fillCharge() float64 {
	return s.Config.A * float64(s.Config.FillRefBps) / s.meanWeightedBps()
}

// cheapestFill returns the eligible node where r's session costs least
// before the fill charge (its load with the session, and its disk term),
// and that cost; -1 when there is none. With skipHeld it looks only at
// nodes without r's title (a search that passes over the cheapest nodes
// because they hold a hot title visits more of the tree); without, it
// looks at those and at the holders with disk room for r, so that a
// result without the title is the cheapest such node, and a holder is at
// most as dear as any of them.
func (s *Scheduler) cheapestFill(r *Request, skipHeld bool) (int, float64) {
	if len(s.fills.v) < 2 {
		return -1, 0 // no node yet: an empty tree
	}
	f := newFillSearch(s, r, skipHeld)
	f.visit(1, f.bound(1))
	return f.best, f.bestC
}

// holds reports whether node i (>= 0) holds or fills title.
func (s *Scheduler) holds(i int, title string) (filling, ok bool) {
	if i < 0 {
		return false, false
	}
	return s.Nodes[i].Holds(title)
}
