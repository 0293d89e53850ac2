package lsm

import (
	"math"
	"sort"
)

func init() {
	Register("chbl", func(Config) Policy { return &BoundedLoadHashing{} })
}

// The ring's points: the node of the largest weighted capacity in service
// gets chblMaxPoints (fewer when there are so many nodes that the ring
// would pass chblRingPoints, never under chblMinPoints), each other node
// points in proportion to its weighted capacity, at least 1. Relative, so
// that the ring's size and its rebuild (on the request path, at each
// change of the nodes' state) do not grow with absolute capacities or
// weights: 100 Gbit/s nodes, or a weight of 65535, give the same ring as
// 1 Gbit/s nodes at weight 100.
const (
	chblMaxPoints  = 160
	chblMinPoints  = 16
	chblRingPoints = 1 << 16
)

type ringPoint struct {
	hash uint64
	node int32
}

// BoundedLoadHashing ("chbl": consistent hashing with bounded loads,
// Mirrokni, Thorup, Zadimoghaddam, SODA 2018; HAProxy's hash-type
// consistent with hash-balance-factor) places a title's hash on a ring of
// points of the nodes in service (points in proportion to capacity times
// Weight/100, the largest chblMaxPoints) and walks clockwise to the first node that is eligible and
// whose utilization after taking the session stays within Config.CHBLFactor
// times the cluster's mean utilization after it (the mean of the site's
// nodes while Place keeps to a site, Request.Site, and of the nodes that
// offer what the request requires, Request.Requires, and of those that
// can serve the title, NodeSpec.NoOrigin: the ring walk passes over the
// others). Titles thus stick to one node until it is
// c times busier than the mean, then spill to the next node on the ring,
// the same one for every request of the title.
type BoundedLoadHashing struct {
	version uint64
	ring    []ringPoint
	capBps  float64 // egress capacity of the nodes in service, bit/s
	// noOrigin: a node in service has no origin (NodeSpec.NoOrigin): the
	// mean is then taken per title, over the nodes that can serve it.
	noOrigin bool
	seen     []uint32 // per node: the pick that last examined it
	pick     uint32
}

var _ Policy = (*BoundedLoadHashing)(nil)

// Name returns "chbl".
func (*BoundedLoadHashing) Name() string { return "chbl" }

func (p *BoundedLoadHashing) rebuild(s *Scheduler) {
	p.ring, p.capBps, p.noOrigin = p.ring[:0], 0, false
	var top float64 // the largest weighted capacity in service, bit/s
	in := 0
	for _, n := range s.Nodes {
		if s.InService(n) {
			top = max(top, weightedBps(n))
			in++
		}
	}
	most := float64(chblMaxPoints)
	if in > 0 {
		most = min(most, max(chblMinPoints, float64(chblRingPoints/in)))
	}
	for i, n := range s.Nodes {
		if !s.InService(n) {
			continue
		}
		p.noOrigin = p.noOrigin || n.NoOrigin
		p.capBps += float64(n.Capacity.EgressBps)
		k := max(1, int(math.Round(most*weightedBps(n)/top)))
		for j := 0; j < k; j++ {
			p.ring = append(p.ring, ringPoint{hash: mix64(hash64(n.ID) + uint64(j)), node: int32(i)})
		}
	}
	sort.Slice(p.ring, func(a, b int) bool { return p.ring[a].hash < p.ring[b].hash })
	p.version = s.Version()
}

// Pick implements Policy.
func (p *BoundedLoadHashing) Pick(s *Scheduler, r *Request) int {
	if p.ring == nil || p.version != s.Version() {
		p.rebuild(s)
	}
	if len(p.ring) == 0 {
		return -1
	}
	var reserved int64
	capBps := p.capBps
	narrow := r.restrict != "" || r.Requires != 0 || p.noOrigin
	if narrow {
		capBps = 0 // the mean of the nodes among which Place chooses
	}
	for _, n := range s.Nodes {
		if !s.InService(n) || !r.inScope(n) || r.Requires&^n.Features != 0 || !canServe(n, r.Title) {
			continue
		}
		reserved += n.ReservedBps
		if narrow {
			capBps += float64(n.Capacity.EgressBps)
		}
	}
	if capBps <= 0 {
		return -1 // no node of the site in service
	}
	// The paper's bound is ceil(c*m/n) balls per bin; with sessions of
	// r.Bitrate as balls and bins of unequal capacity, a node may hold
	// ceil(c * mean utilization * its capacity / r.Bitrate) sessions' worth.
	mean := float64(reserved+r.Bitrate) / capBps
	b := float64(r.Bitrate)
	for len(p.seen) < len(s.Nodes) {
		p.seen = append(p.seen, 0)
	}
	p.pick++
	h := r.TitleHash()
	k := sort.Search(len(p.ring), func(j int) bool { return p.ring[j].hash >= h })
	for step := 0; step < len(p.ring); step++ {
		i := int(p.ring[(k+step)%len(p.ring)].node)
		if p.seen[i] == p.pick {
			continue // a node's later points give the same answer
		}
		p.seen[i] = p.pick
		n := s.Nodes[i]
		allowed := math.Ceil(s.Config.CHBLFactor*mean*float64(n.Capacity.EgressBps)/b) * b
		if float64(n.ReservedBps)+b <= allowed && s.Eligible(i, r) {
			return i
		}
	}
	if r.NoFill {
		// Only the title's holders may take it (no fill can start): the
		// bound, which spreads a title's load over more nodes by filling
		// it there, gives way to the first holder along the ring.
		for step := 0; step < len(p.ring); step++ {
			if i := int(p.ring[(k+step)%len(p.ring)].node); s.Eligible(i, r) {
				return i
			}
		}
	}
	return -1
}
