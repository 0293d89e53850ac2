package lsm

import (
	"math"
	"sort"
)

func init() {
	Register("chbl", func(Config) Policy { return &BoundedLoadHashing{} })
}

// The ring's points: chblPoints per 100 Mbit/s of a node's weighted
// capacity (capacity × Weight/100), at least 1 and at most chblMaxPoints
// (100 Gbit/s at weight 100: the nodes above share alike on the ring; the
// bound still holds each to its own capacity). A node's points depend on
// that node alone, so that a change of another (a larger node joining, a
// weight changed) moves no title between the nodes that did not change.
const (
	chblPoints    = 4
	chblMaxPoints = 4000
)

type ringPoint struct {
	hash uint64
	node int32
}

// BoundedLoadHashing ("chbl": consistent hashing with bounded loads,
// Mirrokni, Thorup, Zadimoghaddam, SODA 2018; HAProxy's hash-type
// consistent with hash-balance-factor) places a title's hash on a ring of
// points of the registered nodes (points in proportion to capacity times
// Weight/100: chblPoints, chblMaxPoints) and walks clockwise to the first
// node that is eligible and whose utilization after taking the session
// stays within Config.CHBLFactor times the cluster's mean utilization
// after it (the mean of the nodes in service, of the site's while Place
// keeps to a site, Request.Site, of those that offer what the request
// requires, Request.Requires, and of those that can serve the title,
// NodeSpec.NoOrigin: the ring walk passes over the others). Titles thus
// stick to one node until it is c times busier than the mean, then spill
// to the next node on the ring, the same one for every request of the
// title. The ring holds the nodes out of service too, passed over as
// ineligible: a node that drains, dies or flaps takes its points with it
// (its titles go on to the next node) without a rebuild, which is made
// only when a node joins, leaves or changes its weighted capacity.
type BoundedLoadHashing struct {
	ring []ringPoint
	// built is the weighted capacity, bit/s, of each node (by index) the
	// ring was built with, and ids their ids: a change rebuilds it.
	built []float64
	ids   []string
	// version is the nodes' state (Scheduler.Version) when the ring was
	// last found up to date.
	version uint64
	seen    []uint32 // per node: the pick that last examined it
	pick    uint32
}

var _ Policy = (*BoundedLoadHashing)(nil)

// Name returns "chbl".
func (*BoundedLoadHashing) Name() string { return "chbl" }

// chblPointsOf returns node n's points on the ring.
func chblPointsOf(n *Node) int {
	return min(max(1, int(scale(n)*chblPoints)), chblMaxPoints)
}

func (p *BoundedLoadHashing) rebuild(s *Scheduler) {
	p.ring, p.built, p.ids = p.ring[:0], p.built[:0], p.ids[:0]
	for i, n := range s.Nodes {
		p.built, p.ids = append(p.built, weightedBps(n)), append(p.ids, n.ID)
		for j := range chblPointsOf(n) {
			p.ring = append(p.ring, ringPoint{hash: mix64(hash64(n.ID) + uint64(j)), node: int32(i)})
		}
	}
	sort.Slice(p.ring, func(a, b int) bool { return p.ring[a].hash < p.ring[b].hash })
}

// stale reports whether the ring was built with other nodes, or other
// weighted capacities, than s has now: looked at only when the nodes'
// state changed since the last look (Scheduler.Version).
func (p *BoundedLoadHashing) stale(s *Scheduler) bool {
	if p.ring != nil && p.version == s.Version() {
		return false
	}
	p.version = s.Version()
	if p.ring == nil || len(p.built) != len(s.Nodes) {
		return true
	}
	for i, n := range s.Nodes {
		if p.built[i] != weightedBps(n) || p.ids[i] != n.ID {
			return true
		}
	}
	return false
}

// Pick implements Policy.
func (p *BoundedLoadHashing) Pick(s *Scheduler, r *Request) int {
	if p.stale(s) {
		p.rebuild(s)
	}
	if len(p.ring) == 0 {
		return -1
	}
	// The mean of the nodes among which Place chooses.
	var reserved int64
	var capBps float64
	for _, n := range s.Nodes {
		if !s.InService(n) || !r.inScope(n) || r.Requires&^n.Features != 0 || !canServe(n, r.Title) {
			continue
		}
		reserved += n.ReservedBps
		capBps += float64(n.Capacity.EgressBps)
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
