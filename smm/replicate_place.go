package smm

import (
	"math"
	"slices"
	"sort"
	"time"
)

// nodeState is one alive node during a Plan.
type nodeState struct {
	v          *NodeView
	items      map[string]*Item
	used       int64   // bytes of its items and of prefetches ordered but not yet seen
	fills      int     // fills in progress, including prefetches ordered but not yet seen
	planBytes  int64   // bytes of the titles planned on it
	planLoad   float64 // expected peak demand of the titles planned on it, bit/s
	diskTarget float64 // bytes the plan may fill: DiskFill * DiskBytes
	site       int     // its site's index in the Plan's planSites.groups, -1 when none
}

// sync reads the view: the alive nodes, who holds what, and the fate of
// the prefetches ordered earlier.
func (r *Replicator) sync(now time.Time, c *ClusterView) []*nodeState {
	var alive []*nodeState
	byID := map[string]*nodeState{}
	r.holders = map[string][]string{}
	for i := range c.Nodes {
		v := &c.Nodes[i]
		if !v.Alive || v.ID == "" || byID[v.ID] != nil {
			continue
		}
		ns := &nodeState{v: v, items: make(map[string]*Item, len(v.Items)), fills: max(v.Fills, 0),
			diskTarget: r.cfg.DiskFill * float64(max(v.DiskBytes, 0)), site: -1}
		for j := range v.Items {
			it := &v.Items[j]
			if it.Title == "" || ns.items[it.Title] != nil {
				continue
			}
			ns.items[it.Title] = it
			ns.used += max(it.Bytes, 0)
			r.holders[it.Title] = append(r.holders[it.Title], v.ID)
		}
		alive = append(alive, ns)
		byID[v.ID] = ns
	}
	r.unplayable = unplayableCopies(alive, c.Titles)
	for k, until := range r.held {
		if !now.Before(until) {
			delete(r.held, k)
		}
	}
	r.pruneKeeps(now, "")
	for _, k := range r.sortedFillKeys() {
		f := r.fills[k]
		ns := byID[k.node]
		if f.backoff {
			switch {
			case !now.After(f.next.Add(r.cfg.RetryMax)):
			case !f.byHand:
				delete(r.fills, k) // not ordered again for long: forget it
			case ns == nil:
				r.dropHand(k, f, DropNotRetried) // the operator's: said so (DroppedPrefetches)
			default:
				// The operator's, its node in service: it waits for a
				// fill slot there, a free origin channel or room, and is
				// ordered once there is one (Queued), unless it never
				// can be, or the node holds a copy of the title (complete:
				// a stale one kept, or one never seen filling).
				info, known := c.Titles[k.title]
				it := ns.items[k.title]
				if !known || info.Bytes <= 0 || info.Bytes > ns.v.DiskBytes || (it != nil && !it.InUse && !it.Filling) {
					r.dropHand(k, f, DropNotRetriedOther)
				}
			}
			continue
		}
		if ns == nil {
			// The node died or left: its fill is gone. The operator's
			// prefetch is retried after its backoff (when the node is
			// back); a planned one is for the plan to decide again.
			if f.byHand {
				r.failedInPlan(k, now, DropNodeLeft)
			} else {
				delete(r.fills, k)
			}
			continue
		}
		it := ns.items[k.title]
		switch {
		case it != nil && !it.InUse && !it.Filling:
			r.fillDone(k, now)
		case it != nil:
			f.seen = true
		case f.seen || now.Sub(f.at) > r.cfg.FillTimeout:
			r.failedInPlan(k, now, DropLastTryLost)
		default:
			// Ordered, not yet visible: count its room and its transfer.
			ns.used += f.bytes
			ns.fills++
			r.holders[k.title] = append(r.holders[k.title], k.node)
		}
	}
	return alive
}

// capRef is the bit/s one node's egress carries at the target utilization,
// on average over the alive nodes that have an origin: a node without one
// (NodeView.NoOrigin) can hold no new replica, so its egress, however
// large, must not shrink the replica counts the others need. When none of
// alive has an origin, the average is over all of them.
func (r *Replicator) capRef(alive []*nodeState) float64 {
	var sum, all float64
	n := 0
	for _, ns := range alive {
		e := float64(max(ns.v.EgressBps, 0))
		all += e
		if !ns.v.NoOrigin {
			sum += e
			n++
		}
	}
	if n == 0 {
		sum, n = all, len(alive)
	}
	if sum <= 0 {
		return 1
	}
	return r.cfg.TargetUtilization * sum / float64(n)
}

// replicas returns the replica count for demand x (in node capacities)
// given the previous count, with hysteresis, between 1 and n.
func (r *Replicator) replicas(x float64, prev, n int) int {
	k := max(prev, 1)
	for k < n && x > float64(k)*r.cfg.AddAbove {
		k++
	}
	for k > 1 && x < float64(k-1)*r.cfg.DropBelow {
		k--
	}
	return min(k, max(n, 1))
}

// place computes the new plan: per title, its replica count (replicas),
// then its nodes: those it is pinned to, then, with sites, each site's
// replicas on its own nodes (replicate_sites.go), then the rest anywhere
// (fill).
func (r *Replicator) place(ds []demandOf, alive []*nodeState, c *ClusterView) {
	capRef := r.capRef(alive)
	lo := minEgress(alive)
	var budget float64
	byID := make(map[string]*nodeState, len(alive))
	for _, ns := range alive {
		budget += ns.diskTarget
		byID[ns.v.ID] = ns
	}
	next := make(map[string]*titlePlan, len(r.plan))
	sites := r.sites
	var nextK map[string][]siteCount
	if sites != nil {
		nextK = make(map[string][]siteCount, len(r.siteK))
	}
	for i := range ds {
		d := &ds[i]
		if !d.pinned && d.value <= 0 {
			continue
		}
		size := d.info.Bytes
		if !d.pinned && budget < float64(size) {
			continue // does not fit: a smaller title may
		}
		prev := r.plan[d.id]
		prevK := 0
		if prev != nil {
			prevK = prev.replicas
		}
		// A pin to a node whose disk cannot take the title is no replica.
		pinnedTo := slices.DeleteFunc(slices.Clone(r.pins.nodesPinning(d.id)), func(id string) bool { return cannotHold(byID[id], size) })
		// Over the nodes that can stream the title (replicate_egress.go):
		// when one is too small for it, its count is theirs, and a pin
		// to a too small node is no replica.
		able, cref, small := alive, capRef, someTooSmall(d.info, lo)
		if small {
			if able = streamers(alive, d.info); len(able) == 0 {
				continue // no node can stream it: no replica, no prefetch
			}
			cref = r.capRef(able)
			pinnedTo = slices.DeleteFunc(slices.Clone(pinnedTo), func(id string) bool { return cannotStream(byID[id], d.info) })
		}
		k := max(r.replicas(d.peak/cref, prevK, len(able)), len(pinnedTo))
		planK := k // the plan's count, which the next plan's hysteresis starts from
		if k == len(pinnedTo) && k < len(able) && r.pinnedCopyToCome(d.id, pinnedTo, byID) {
			// A copy elsewhere stays planned (not evicted for room)
			// until the pinned nodes' are complete: a pin moves a
			// replica without a time when the cluster has none. The
			// extra copy is not counted as the title's replicas.
			k++
		}
		share := d.peak / float64(k)
		var chosen []string
		take := func(ns *nodeState) {
			chosen = append(chosen, ns.v.ID)
			ns.planBytes += size
			ns.planLoad += share
			budget -= float64(size)
		}
		has := func(id string) bool {
			for _, x := range chosen {
				if x == id {
					return true
				}
			}
			return false
		}
		// skip: taken, or evicted there by the operator (a pin to the
		// node, taken first, is not skipped).
		// A node without an origin (NodeView.NoOrigin) is skipped unless it
		// holds the title: it cannot fill it. A node whose egress is less
		// than the title's bitrate is skipped: it cannot stream it.
		overHolds := false // a title pinned to the cluster that no node would take else (below)
		skip := func(id string) bool {
			return has(id) || (!overHolds && len(r.held) > 0 && r.isHeld(id, d.id, r.at)) || cannotFill(byID[id], d.id) ||
				(small && cannotStream(byID[id], d.info)) || cannotHold(byID[id], size)
		}
		// count is how many nodes are chosen, of site g (-1: of any).
		count := func(g int) int {
			if g < 0 {
				return len(chosen)
			}
			n := 0
			for _, id := range chosen {
				if byID[id].site == g {
					n++
				}
			}
			return n
		}
		full := func(want, g int) bool {
			return len(chosen) >= k || count(g) >= want || (!d.pinned && budget < float64(size))
		}
		// fill chooses nodes of site g (-1: any) until want are chosen
		// there: those that hold the title or fill it, the previously
		// planned first; those planned before whose copy is still to
		// come; then new ones, one at each site of prefer (a site's
		// index) in turn, then the best of nodes.
		fill := func(want, g int, prefer []int, nodes []*nodeState) {
			for _, pass := range []bool{true, false} {
				for _, id := range r.holders[d.id] {
					if full(want, g) {
						break
					}
					ns := byID[id]
					if ns == nil || (g >= 0 && ns.site != g) || skip(id) || (prev.has(id) != pass) {
						continue
					}
					take(ns)
				}
			}
			if prev != nil {
				for _, id := range prev.nodes {
					if full(want, g) {
						break
					}
					if ns := byID[id]; ns != nil && (g < 0 || ns.site == g) && !skip(id) && ns.planBytes+size <= int64(ns.diskTarget) {
						take(ns)
					}
				}
			}
			for _, s := range prefer {
				if full(want, g) {
					break
				}
				if ns := r.bestNode(sites.groups[s].nodes, d.id, size, share, skip); ns != nil {
					take(ns)
				}
			}
			for !full(want, g) {
				ns := r.bestNode(nodes, d.id, size, share, skip)
				if ns == nil {
					break
				}
				take(ns)
			}
		}
		for _, id := range pinnedTo {
			if ns := byID[id]; ns != nil && !has(id) && !cannotFill(ns, d.id) && !cannotStream(ns, d.info) {
				take(ns)
			}
		}
		var prefer []int
		if sites != nil {
			var fit func(*nodeState) bool // nil: every node can stream it
			if small {
				fit = func(ns *nodeState) bool { return !cannotStream(ns, d.info) }
			}
			if counts := r.quotas(sites, d, k, r.siteK[d.id], fit); counts != nil {
				nextK[d.id] = counts
			}
			for _, g := range sites.order {
				fill(sites.k[g], g, nil, sites.groups[g].nodes)
			}
			prefer = sites.spread
		}
		fill(k, -1, prefer, alive)
		if len(chosen) == 0 && len(r.held) > 0 && r.pins.Pinned("", d.id) {
			// Pinned to the cluster, and every node that could take it
			// held by the operator's evictions of it (allowed while
			// another node held it whole, since gone): the pin keeps a
			// copy in the cluster; a hold only keeps the planner from
			// undoing an eviction while the title has one elsewhere.
			overHolds = true
			fill(1, -1, nil, alive)
		}
		if len(chosen) > 0 {
			next[d.id] = &titlePlan{replicas: planK, nodes: chosen}
		} else if nextK != nil {
			delete(nextK, d.id)
		}
	}
	r.stats.PlanChanges += planDiff(r.plan, next)
	r.plan = next
	r.siteK = nextK
}

// cannotFill reports whether ns (nil: none) has no origin
// (NodeView.NoOrigin) and does not hold title: no replica of it can be
// planned there.
func cannotFill(ns *nodeState, title string) bool {
	return ns != nil && ns.v.NoOrigin && ns.items[title] == nil
}

// cannotHold reports whether ns's disk (NodeView.DiskBytes, when known)
// is smaller than a title of size bytes: no plan puts the title there,
// not for a pin to it.
func cannotHold(ns *nodeState, size int64) bool {
	return ns != nil && ns.v.DiskBytes > 0 && ns.v.DiskBytes < size
}

// pinnedCopyToCome reports whether a node of pinnedTo lacks a complete
// copy of title (missing or filling) while a node outside pinnedTo holds
// one: that copy is to stay planned until the pinned ones are there.
func (r *Replicator) pinnedCopyToCome(title string, pinnedTo []string, byID map[string]*nodeState) bool {
	toCome := false
	for _, id := range pinnedTo {
		if ns := byID[id]; ns != nil {
			if it := ns.items[title]; it == nil || it.Filling {
				toCome = true
			}
		}
	}
	if !toCome {
		return false
	}
	for _, id := range r.holders[title] {
		if ns := byID[id]; ns != nil && !slices.Contains(pinnedTo, id) {
			if it := ns.items[title]; it != nil && !it.Filling {
				return true
			}
		}
	}
	return false
}

// bestNode returns the node where adding a replica of title (size bytes)
// carrying share bit/s leaves the lowest expected load per egress plus
// bytes per disk, among those with room in their plan; nil if none. The
// bytes per disk are the titles planned on the node plus what the replica
// brings from the origin: the title's size, less the bytes of a partial
// of it the node keeps (NodeView.Partials), which its fill resumes from.
// So among nodes otherwise alike the one with most of the title already
// there gets the replica, and a byte the origin need not send weighs as
// much as a byte of disk planned.
func (r *Replicator) bestNode(alive []*nodeState, title string, size int64, share float64, skip func(string) bool) *nodeState {
	var best *nodeState
	bestScore := math.Inf(1)
	for _, ns := range alive {
		if skip(ns.v.ID) || float64(ns.planBytes+size) > ns.diskTarget || ns.v.EgressBps <= 0 {
			continue
		}
		load := (ns.planLoad + share) / (r.cfg.TargetUtilization * float64(ns.v.EgressBps))
		disk := float64(ns.planBytes+size-partialOf(ns.v, title, size)) / ns.diskTarget
		if s := load + disk; s < bestScore {
			best, bestScore = ns, s
		}
	}
	return best
}

// partialOf returns the bytes of title, of size bytes, that node v keeps
// from a fill cut short (NodeView.Partials), in [0, size].
func partialOf(v *NodeView, title string, size int64) int64 {
	if v.Partials == nil {
		return 0
	}
	return min(max(v.Partials[title], 0), max(size, 0))
}

func (p *titlePlan) has(node string) bool {
	if p == nil {
		return false
	}
	for _, n := range p.nodes {
		if n == node {
			return true
		}
	}
	return false
}

// planDiff counts the (node, title) pairs in one plan and not the other.
func planDiff(a, b map[string]*titlePlan) int {
	n := 0
	for t, pa := range a {
		pb := b[t]
		for _, x := range pa.nodes {
			if !pb.has(x) {
				n++
			}
		}
	}
	for t, pb := range b {
		pa := a[t]
		for _, x := range pb.nodes {
			if !pa.has(x) {
				n++
			}
		}
	}
	return n
}

// sortedFillKeys returns the keys of r.fills by node, then title: map
// order is random, and a plan must repeat.
func (r *Replicator) sortedFillKeys() []fillKey {
	keys := make([]fillKey, 0, len(r.fills))
	for k := range r.fills {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].node != keys[j].node {
			return keys[i].node < keys[j].node
		}
		return keys[i].title < keys[j].title
	})
	return keys
}
