package lsm

import (
	"fmt"
	"time"
)

// InService reports whether n may take new sessions at all: alive, not
// draining, weight above 0.
func (s *Scheduler) InService(n *Node) bool {
	return n.Alive && !n.Unreachable && !n.Draining && n.Weight > 0
}

// Ramp returns node i's slow-start share at the scheduler's current time
// (Now), in (0, 1]: the part of its egress capacity it may reserve and the
// factor on its weight. It is 1 outside slow start.
func (s *Scheduler) Ramp(i int) float64 {
	return s.Nodes[i].ramp(s.now, s.Config.SlowStart, s.Config.SlowStartFloor)
}

// EffectiveWeight returns node i's weight as the weighted IPVS policies
// (wrr, wlc, sed, nq, lblc, lblcr, twos) use it: its relative capacity c
// (announced egress in units of 100 Mbit/s, times Weight/100: a node
// announces its capacity, so Weight is the operator's adjustment, 100 =
// as announced) times its slow-start share (Ramp). 0 for a node not in
// service. sh, mh and chbl build their tables on the relative capacity
// alone, without the slow-start share.
func (s *Scheduler) EffectiveWeight(i int) float64 {
	n := s.Nodes[i]
	if !s.InService(n) {
		return 0
	}
	return scale(n) * s.Ramp(i)
}

// CapBps returns the bit/s node i may have reserved now: its egress
// capacity, times its slow-start share while it ramps.
func (s *Scheduler) CapBps(i int) int64 {
	n := s.Nodes[i]
	if n.SlowUntil.IsZero() || !s.now.Before(n.SlowUntil) {
		return n.Capacity.EgressBps
	}
	return int64(float64(n.Capacity.EgressBps) * s.Ramp(i))
}

// Eligible reports whether node i may take r now: in service, not
// flagged overloaded by its own threshold (Node.OverloadFlag), with
// headroom for r's bitrate under its (slow-start) cap, below its session
// limit, and holding or filling r's title or with disk room for it (its
// disk minus the titles in use or pinned there, when r.Bytes and the disk
// size are known) and no disk fault (Node.DiskFault), with room still for
// the title's bytes when it is a prefetch the node would stop for a fill
// on demand (Holding.Preemptible: r makes them in use), and not holding a
// stale copy of it (Holding.Stale) while the origin can fill the title,
// and in the request's site while Place tries that site first
// (Request.Site), and offering what the request requires
// (Request.Requires). A node without an origin (NodeSpec.NoOrigin) is
// eligible only for a title it holds complete: it cannot fill. While
// every origin channel is taken (OriginChannelsBusy, during Place), a
// node whose copy is a prefetch that gives its channel away
// (Holding.Preemptible, no viewer, not pinned) is not: the viewer would
// make it a fill with no channel. This is the admission rule every
// policy obeys.
func (s *Scheduler) Eligible(i int, r *Request) bool {
	n := s.Nodes[i]
	if !n.Alive || n.Unreachable || n.Draining || n.Weight <= 0 || n.OverloadFlag {
		return false
	}
	if !r.inScope(n) || r.Requires&^n.Features != 0 {
		return false
	}
	if n.stale > 0 && !r.NoFill && !r.OriginDown {
		if c := n.titles[r.Title]; c != nil && c.stale {
			return false
		}
	}
	// Against the headroom, not the sum: a bitrate near MaxInt64 (a
	// catalog's nonsense) would wrap the sum negative and fit.
	if r.Bitrate > n.Capacity.EgressBps-n.ReservedBps {
		return false
	}
	if !n.SlowUntil.IsZero() && r.Bitrate > s.CapBps(i)-n.ReservedBps {
		return false
	}
	if n.Capacity.MaxSessions > 0 && n.Sessions >= n.Capacity.MaxSessions {
		return false
	}
	c := n.titles[r.Title]
	if n.NoOrigin {
		return c != nil && !c.filling // no fill there, nor a share of one
	}
	if r.noChannel && c != nil && c.yieldsChannel() {
		// A viewer makes a prefetch that gives its origin channel away a
		// fill that keeps one (the node asks it again as a fill), and
		// every channel is taken by such fills: the prefetch waits at the
		// origin, and the viewer would play its bytes and stall.
		return false
	}
	if c != nil && c.preemptible && !c.inUse() && roomBytes(n) < c.bytes {
		// A viewer makes a preemptible prefetch's bytes in use, and fills
		// placed since count on them as room: the node would stop the
		// prefetch under that viewer, or fail those fills.
		return false
	}
	if r.NoFill || r.OriginDown || n.DiskFault || !diskRoom(n, r.Bytes) {
		return c != nil && !(r.OriginDown && c.booked)
	}
	return true
}

// HoldersInServiceFor returns how many nodes in service hold or fill r's
// title and could take r: they offer r.Requires and, when r is kept to
// its site (r.SiteOnly with r.Site set), stand in that site. Load, disk
// room and session limits are not looked at: this answers whether a
// request could be served without a fill, not whether it can be now.
// With r.OriginDown a fill booked but not yet reported (Holding.Booked)
// does not count, nor does a fill on a node without an origin
// (NodeSpec.NoOrigin), which takes no viewer of it; without it, while
// every origin channel is taken (OriginChannelsBusy), neither does a
// prefetch that gives its channel away (Eligible).
func (s *Scheduler) HoldersInServiceFor(r *Request) int {
	k := 0
	noChannel := !r.OriginDown && s.OriginChannelsBusy()
	for _, i := range s.holders[r.Title] {
		n := s.Nodes[i]
		if r.Requires&^n.Features != 0 || (r.SiteOnly && r.Site != "" && n.Site != r.Site) {
			continue
		}
		if noChannel && n.titles[r.Title].yieldsChannel() {
			continue // a viewer would make it a fill with no channel
		}
		if r.OriginDown && n.titles[r.Title].booked {
			continue // cannot start without the origin
		}
		if n.NoOrigin && n.titles[r.Title].filling {
			continue // takes no viewer of a title it does not hold complete
		}
		if s.InService(n) {
			k++
		}
	}
	return k
}

// weightedBps returns E, node n's egress capacity times Weight/100 in
// bit/s (at least 1): the capacity the load formula divides by.
func weightedBps(n *Node) float64 {
	return max(1, float64(n.Capacity.EgressBps)*float64(n.Weight)/DefaultWeight)
}

// scale returns c, node n's relative capacity: E in units of 100 Mbit/s.
func scale(n *Node) float64 { return weightedBps(n) / 1e8 }

// Load returns the load formula of DESIGN.md for node i, with sessions
// weighed by their bit/s and divided by the node's weighted capacity:
//
//	L = (Rs + A*Rd) / E + (B/Ul) * max(0, U - Ul)
//
// where Rs and Rd are the bit/s reserved by the node's sessions served
// from a local copy and from a fill in progress, E its egress capacity
// times Weight/100, U its utilization and Ul the normal limit. With one
// bitrate b for all titles this is the seed's L = Ns + a*Nd +
// b*max(0, L_actual - Ll) (b inversely proportional to Ll) scaled by b/E;
// weighing by bit/s and capacity lets heterogeneous titles and nodes
// compare by how full they are.
func (s *Scheduler) Load(i int) float64 { return s.loadWith(i, s.Config.A) }

// loadWith is Load with a for A.
func (s *Scheduler) loadWith(i int, a float64) float64 {
	n := s.Nodes[i]
	rd := float64(n.FillBps)
	rs := float64(n.ReservedBps) - rd
	l := (rs + a*rd) / weightedBps(n)
	if u := n.Utilization(); u > s.Config.Normal {
		l += s.Config.B / s.Config.Normal * (u - s.Config.Normal)
	}
	return l
}

// storedShare is how much the disk term counts a byte stored but not in
// use, relative to a byte in use: such a byte can be evicted to make room,
// at the price of fetching it again if it is asked for, so a node with
// free disk is a slightly better home for a new title than one that must
// evict (and, among otherwise equal nodes, new titles spread over the
// empty disks instead of piling onto the first node).
const storedShare = 0.1

// diskTerm is the default policy's charge for filling a title on n:
// Config.DiskPressure times the share of n's disk in use, plus
// storedShare of that for the share stored but evictable.
func (s *Scheduler) diskTerm(n *Node) float64 {
	if n.Capacity.DiskBytes <= 0 || s.Config.DiskPressure == 0 {
		return 0
	}
	idle := max(0, n.StoredBytes-n.InUseBytes)
	return s.Config.DiskPressure * (float64(n.InUseBytes) + storedShare*float64(idle)) / float64(n.Capacity.DiskBytes)
}

// overloadOf returns node n's overload threshold: its own (Node.Overload)
// when the operator set one, else Config.Overload.
func (s *Scheduler) overloadOf(n *Node) float64 {
	if n.Overload > 0 {
		return n.Overload
	}
	return s.Config.Overload
}

// Overloaded reports whether node i's utilization is above its overload
// threshold (Node.Overload, else Config.Overload): the test the locality
// policies (lall, lblc, lblcr) apply to a title's holders.
func (s *Scheduler) Overloaded(i int) bool {
	n := s.Nodes[i]
	return n.Utilization() > s.overloadOf(n)
}

// touch refreshes what the scheduler derives from n: its IPVS overload
// flag (Node.OverloadFlag) and its leaf in the default policy's fill tree.
func (s *Scheduler) touch(n *Node) {
	switch u := n.Utilization(); {
	case n.Overload <= 0:
		n.OverloadFlag = false
	case u > n.Overload:
		n.OverloadFlag = true
	case u < n.Overload*s.Config.OverloadLower:
		n.OverloadFlag = false
	}
	if !s.InService(n) || n.OverloadFlag || n.NoOrigin {
		s.fills.set(n.Index, noFill) // NoOrigin: it fills nothing
		return
	}
	head := n.Capacity.EgressBps - n.ReservedBps
	if n.Capacity.MaxSessions > 0 && n.Sessions >= n.Capacity.MaxSessions {
		head = -1
	}
	s.fills.set(n.Index, fillLeaf(s.loadWith(n.Index, 1)+s.diskTerm(n), weightedBps(n), head, roomBytes(n)))
}

// Place chooses a node for r with the current policy and reserves r's
// bitrate on it. When no node is eligible and some hold a stale copy of
// r's title (Holding.Stale), it chooses among the title's holders, stale
// copies included, the one already playing it most (staleFallback): the
// old version rather than a refusal, on as few copies as can take it.
// With r.Site it first chooses among the nodes of that site, then (unless
// r.SiteOnly) among all; a stale copy of the site is chosen only once no
// node of any site can take r otherwise (the current version across
// sites before the old one in the site), then one of any site. It returns
// ErrBadRequest, ErrNoNode when no node is in service, or ErrNoCapacity
// when none has headroom.
func (s *Scheduler) Place(r *Request, now time.Time) (Reservation, error) {
	if r.Title == "" || r.Bitrate <= 0 {
		return Reservation{}, ErrBadRequest
	}
	s.advance(now)
	if r.Site == "" {
		return s.place(r)
	}
	r.restrict, r.noStale = r.Site, !r.SiteOnly
	res, err := s.place(r)
	r.restrict = ""
	if err == nil || r.SiteOnly {
		r.noStale = false
		return res, err
	}
	res, err = s.place(r) // no node of the site can: any node
	r.noStale = false
	if err == nil || !s.staleHeld(r.Title) {
		return res, err
	}
	// None can but with a stale copy: the site's first, then any.
	r.restrict = r.Site
	res, err = s.place(r)
	r.restrict = ""
	if err == nil {
		return res, err
	}
	return s.place(r)
}

// tableKey is the key of r's title in a policy's title table (lblc,
// lblcr, lard, lard/r): the title, and the site while Place keeps to it, so that each
// site keeps its own node for the title (viewers of two sites in turn
// would otherwise move the title back and forth, to a new node of the
// site each time).
func (r *Request) tableKey() string {
	if r.restrict == "" {
		return r.Title
	}
	return r.restrict + "\x00" + r.Title
}

// inScope reports whether node n is among those Place chooses from now:
// n is of r's site while Place keeps to it, any node otherwise.
func (r *Request) inScope(n *Node) bool {
	return r.restrict == "" || n.Site == r.restrict
}

// couldTake reports whether node n could ever take r as things stand,
// whatever its load: of r's site while Place keeps to it, with the
// features r requires, and able to serve its title (canServe). The
// locality policies' tests of another node being idle (lblcOverloaded,
// anyBelow) count only such nodes: one that can take none of r's
// viewers is no reason to move r's title off its node.
func (r *Request) couldTake(n *Node) bool {
	return r.inScope(n) && r.Requires&^n.Features == 0 && canServe(n, r.Title)
}

// place is Place with r's restriction as it is.
func (s *Scheduler) place(r *Request) (Reservation, error) {
	if r.OriginDown && !r.NoFill {
		r.NoFill = true // no fill can start: holders only (Request.OriginDown)
		defer func() { r.NoFill = false }()
	}
	if s.OriginChannelsBusy() {
		r.noChannel = true
		defer func() { r.noChannel = false }()
		if !r.NoFill {
			r.NoFill = true // every origin channel is taken: holders only, for this attempt
			defer func() { r.NoFill = false }()
		}
	}
	i := s.policy.Pick(s, r)
	if i < 0 && !r.NoFill && !r.noStale && s.staleHeld(r.Title) {
		// No node can take the viewer with a fill of the new version (the
		// nodes without the title have no room or headroom, the others
		// hold a stale copy): the old version rather than a refusal.
		r.NoFill = true
		defer func() { r.NoFill = false }()
		i = s.staleFallback(r)
	}
	if i < 0 {
		for _, n := range s.Nodes {
			if s.InService(n) {
				return Reservation{}, ErrNoCapacity
			}
		}
		return Reservation{}, ErrNoNode
	}
	if i >= len(s.Nodes) || !s.Eligible(i, r) {
		// A policy bug must never break the QoS promise.
		return Reservation{}, fmt.Errorf("lsm: policy %s picked ineligible node %d", s.policy.Name(), i)
	}
	return s.reserve(i, r), nil
}

// staleFallback chooses, among the nodes eligible for r (r.NoFill set:
// holders only, stale copies included), the one with the most sessions of
// r's title, then the least loaded; -1 when none. Not the policy's
// choice: spreading the viewers of the old version over every stale copy
// would keep each one playing, so none would ever be evicted and filled
// with the new version; piled on one, the others drain.
func (s *Scheduler) staleFallback(r *Request) int {
	best, bestSessions, bestLoad := -1, -1, 0.0
	for _, i := range s.holders[r.Title] {
		n := int(i)
		if !s.Eligible(n, r) {
			continue
		}
		k, load := s.Nodes[n].titles[r.Title].sessions, s.Load(n)
		if k > bestSessions || (k == bestSessions && load < bestLoad) {
			best, bestSessions, bestLoad = n, k, load
		}
	}
	return best
}

// staleHeld reports whether a node holds a stale copy of title
// (Holding.Stale).
func (s *Scheduler) staleHeld(title string) bool {
	for _, i := range s.holders[title] {
		if r := s.Nodes[i].titles[title]; r != nil && r.stale {
			return true
		}
	}
	return false
}

// Reserve books bitrate on node id for title without asking the policy: the
// manager rebuilds its ledger this way after a restart. It books even
// above the node's capacity (what plays, plays), and Anomalies counts
// that. It fails with ErrUnknownNode, or ErrBadRequest for an empty title
// or bitrate <= 0.
func (s *Scheduler) Reserve(id, title string, bitrate int64) (Reservation, error) {
	n := s.byID[id]
	if n == nil {
		return Reservation{}, fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if title == "" || bitrate <= 0 {
		return Reservation{}, ErrBadRequest
	}
	return s.reserve(n.Index, &Request{Title: title, Bitrate: bitrate}), nil
}

func (s *Scheduler) reserve(i int, r *Request) Reservation {
	n := s.Nodes[i]
	fill := s.book(n, r.Title, r.Bitrate, r.Bytes)
	if n.ReservedBps > n.Capacity.EgressBps {
		s.anomalies.OverCapacity++ // only Reserve can get here
	}
	s.touch(n)
	return Reservation{Node: i, NodeID: n.ID, Title: r.Title, Bitrate: r.Bitrate, Fill: fill}
}

// Release returns a reservation's bitrate to its node (found by index,
// or by NodeID when RemoveNode moved it). Releasing a reservation twice,
// or one the ledger does not have (no such node, or more bit/s or
// sessions than the node has reserved), is the caller's bug: the counters
// stop at zero and Anomalies counts it.
func (s *Scheduler) Release(res Reservation) {
	n := s.nodeOf(res)
	if n == nil {
		s.anomalies.UnbalancedReleases++
		return
	}
	s.unbook(n, res.Title, res.Bitrate)
	s.touch(n)
}

// LiveFilling returns the fills in progress on alive nodes: those of a
// dead node hold no origin channel (its transfers broke with it), though
// its replica view keeps them until it reports again. It passes over the
// nodes while any fill is in progress (the metrics and the admin API ask
// it); a decision asks OriginChannelsBusy.
func (s *Scheduler) LiveFilling() int {
	k := s.filling
	if k == 0 {
		return 0
	}
	for _, n := range s.Nodes {
		if !n.Alive {
			k -= n.filling
		}
	}
	return k
}

// OriginChannelsBusy reports whether Config.FillNeedsChannel holds new
// fills back: it is set, Config.OriginChannels > 0, and the fills on alive
// nodes (LiveFilling) but for the prefetches no viewer plays
// (originChannelsFull) reach OriginChannels. While the fills in the view,
// dead nodes' included, are fewer than the channels, it answers without a
// pass over the nodes.
func (s *Scheduler) OriginChannelsBusy() bool {
	return s.Config.FillNeedsChannel && s.originChannelsFull()
}

// originChannelsFull reports whether Config.OriginChannels > 0 and the
// fills on alive nodes that hold an origin channel a fill cannot take
// reach it; while the fills in the view, dead nodes' included, are fewer,
// without a pass over the nodes. A prefetch no viewer plays
// (Holding.Preemptible, not pinned) does not count: the origin ends it
// for a viewer's fill that finds every channel busy, and the node asks it
// again (cdp). So prefetches, the planner's or an operator's, never keep
// a viewer of a title no node holds waiting for a channel.
func (s *Scheduler) originChannelsFull() bool {
	c := s.Config.OriginChannels
	if c <= 0 || s.filling < c {
		return false
	}
	k := 0
	for _, n := range s.Nodes {
		if n.Alive {
			k += n.filling - n.yielding
		}
	}
	return k >= c
}
