package smm

import (
	"slices"
	"strings"
)

// Sites. When the alive nodes name their sites (NodeView.Site) and the
// requests theirs (ObserveSite), a Plan apportions each title's replica
// count, computed for the cluster as without sites, to the sites by their
// viewers' share of the title's demand:
//
//   - site s's quota is q = k * share(s), k the title's replica count;
//     the site is given round(q) replicas on its own nodes, with
//     hysteresis: from j replicas it gets a (j+1)-th when q >= j + 1/2 + m
//     and loses its j-th when q < j - 1/2 - m, m = (AddAbove -
//     DropBelow) / (2 AddAbove) (0.15 by default: from 0.65 of a replica
//     up, below 0.35 down), at most as many as its alive nodes; when the
//     sites' replicas exceed k, those of the sites most above their quota
//     go;
//   - the other replicas (k less the sites' own: for a title whose demand
//     is spread thin over the sites, its only one) are the cluster's: kept
//     on the nodes that hold them, wherever they are, else placed at the
//     sites whose quota is least served first (one each), then on the
//     best node of the cluster;
//   - the demand of viewers of no site, or of a site without alive nodes,
//     is the cluster's (lsm serves them anywhere).
//
// Prefetches then go to the planned nodes, so to the sites whose viewers
// ask: a site's replica missing while the site has no copy is as urgent
// as a title with no copy at all, at the site's own request rate
// (MinExpected within PrefetchHorizon). Copies counts a node's site's
// copies only (a title's copies at another site are no spares of this
// site's only one), and the plan's evictions keep a site's only copy of a
// title the plan places at that site. Without a site on any alive node
// the plan is exactly the cluster's.

// siteCount is one site's replicas of a title in the plan.
type siteCount struct {
	site string
	k    int
}

// siteGroup is one site's alive nodes during a Plan.
type siteGroup struct {
	name    string
	nodes   []*nodeState
	capRef  float64 // bit/s one of its nodes carries at the target utilization, on average (capRef)
	popSite int     // the site's index in the demand tracker's sites, -1 when no request named it
}

// planSites are the sites of a Plan's alive nodes.
type planSites struct {
	groups []siteGroup // by name
	// scratch, per group, for one title at a time
	q      []float64 // quota in replicas
	k      []int     // replicas given
	prev   []int     // replicas given by the previous plan
	order  []int     // groups by quota, highest first
	spread []int     // groups whose quota is left unserved, most first
}

var _ SitePlanner = (*Replicator)(nil)

// groupSites groups the alive nodes by site, sets each nodeState's site
// and r.nodeSite; nil (and r.nodeSite nil) when no alive node has a site.
func (r *Replicator) groupSites(alive []*nodeState) *planSites {
	r.nodeSite = nil
	if !slices.ContainsFunc(alive, func(ns *nodeState) bool { return ns.v.Site != "" }) {
		return nil
	}
	s := &planSites{}
	r.nodeSite = make(map[string]string, len(alive))
	idx := map[string]int{}
	for _, ns := range alive {
		r.nodeSite[ns.v.ID] = ns.v.Site
		ns.site = -1
		if ns.v.Site == "" {
			continue
		}
		if _, ok := idx[ns.v.Site]; !ok {
			idx[ns.v.Site] = len(s.groups)
			s.groups = append(s.groups, siteGroup{name: ns.v.Site})
		}
	}
	slices.SortFunc(s.groups, func(a, b siteGroup) int { return strings.Compare(a.name, b.name) })
	for i := range s.groups {
		idx[s.groups[i].name] = i
	}
	for _, ns := range alive {
		if ns.v.Site != "" {
			g := idx[ns.v.Site]
			ns.site = g
			s.groups[g].nodes = append(s.groups[g].nodes, ns)
		}
	}
	for i := range s.groups {
		g := &s.groups[i]
		g.capRef = r.capRef(g.nodes)
		g.popSite = r.pop.siteIndex(g.name, false)
	}
	n := len(s.groups)
	s.q, s.k, s.prev = make([]float64, n), make([]int, n), make([]int, n)
	s.order, s.spread = make([]int, 0, n), make([]int, 0, n)
	return s
}

// quotas sets s.q, s.k, s.order and s.spread for title d with k replicas
// in all, given the previous plan's counts prev (see the comment at the
// top of the file), a site given at most as many as its nodes that fit
// (nil: all of them; the nodes that can stream d, replicate_egress.go).
// It returns the counts to remember, nil when no site gets a replica.
func (r *Replicator) quotas(s *planSites, d *demandOf, k int, prev []siteCount, fit func(*nodeState) bool) []siteCount {
	row := r.pop.row(d.popIdx)
	m := (r.cfg.AddAbove - r.cfg.DropBelow) / (2 * r.cfg.AddAbove)
	up, down := 0.5+m, 0.5-m
	sum := 0
	for g := range s.groups {
		grp := &s.groups[g]
		s.q[g] = float64(k) * shareAt(row, grp.popSite)
		s.prev[g] = 0
		for _, c := range prev {
			if c.site == grp.name {
				s.prev[g] = c.k
			}
		}
		avail := len(grp.nodes)
		if fit != nil {
			avail = 0
			for _, ns := range grp.nodes {
				if fit(ns) {
					avail++
				}
			}
		}
		j := min(s.prev[g], avail)
		for j < avail && s.q[g] >= float64(j)+up {
			j++
		}
		for j > 0 && s.q[g] < float64(j-1)+down {
			j--
		}
		s.k[g] = j
		sum += j
	}
	for sum > k {
		// The site most above its quota gives one back (the first by
		// name among equals).
		w := -1
		for g := range s.groups {
			if s.k[g] > 0 && (w < 0 || s.q[g]-float64(s.k[g]) < s.q[w]-float64(s.k[w])) {
				w = g
			}
		}
		s.k[w]--
		sum--
	}
	s.order, s.spread = s.order[:0], s.spread[:0]
	var out []siteCount
	for g := range s.groups {
		if s.k[g] > 0 {
			s.order = append(s.order, g)
			out = append(out, siteCount{s.groups[g].name, s.k[g]})
		}
		if s.q[g] > float64(s.k[g]) {
			s.spread = append(s.spread, g)
		}
	}
	by := func(key func(g int) float64) func(a, b int) int {
		return func(a, b int) int {
			if ka, kb := key(a), key(b); ka != kb {
				if ka > kb {
					return -1
				}
				return 1
			}
			return a - b
		}
	}
	slices.SortStableFunc(s.order, by(func(g int) float64 { return s.q[g] }))
	slices.SortStableFunc(s.spread, by(func(g int) float64 { return s.q[g] - float64(s.k[g]) }))
	return out
}

// siteDemand returns, for a prefetch of title d on ns, the share of d's
// demand that ns's site's viewers make, the bit/s one of the site's nodes
// carries at the target utilization, and the site's copies of d (alive
// holders, prefetches ordered included); with small, over the site's
// nodes that can stream d only (not those of byID too small for it,
// replicate_egress.go); share 0 when ns has no site, no request of its
// site asked for d, or the plan has no sites.
func (r *Replicator) siteDemand(d *demandOf, ns *nodeState, small bool, byID map[string]*nodeState) (share, capRef float64, copies int) {
	if r.sites == nil || ns.site < 0 {
		return 0, 0, 0
	}
	g := &r.sites.groups[ns.site]
	share = shareAt(r.pop.row(d.popIdx), g.popSite)
	if share <= 0 {
		return 0, 0, 0
	}
	for _, h := range r.holders[d.id] {
		if r.nodeSite[h] == g.name && !(small && cannotStream(byID[h], d.info)) {
			copies++
		}
	}
	capRef = g.capRef
	if small {
		capRef = r.capRef(streamers(g.nodes, d.info))
	}
	return share, capRef, copies
}

// siteOnlyCopy reports whether ns holds its site's only copy of title
// while the plan places title at that site on another node (one still to
// fill): an eviction plan keeps it as it keeps a title planned on ns. A
// copy ns is too small to stream (Copies) is none.
func (r *Replicator) siteOnlyCopy(ns *nodeState, title string) bool {
	if r.nodeSite == nil || ns.v.Site == "" || r.unplayable[fillKey{ns.v.ID, title}] || r.Copies(ns.v.ID, title) > 0 {
		return false
	}
	p := r.plan[title]
	if p == nil {
		return false
	}
	for _, n := range p.nodes {
		if n != ns.v.ID && r.nodeSite[n] == ns.v.Site {
			return true
		}
	}
	return false
}

// SiteReplicas returns the replicas the current plan gives each site of
// title on its own nodes (the rest of PlannedNodes' count is the
// cluster's), by site; nil without sites.
func (r *Replicator) SiteReplicas(title string) map[string]int {
	cs := r.siteK[title]
	if len(cs) == 0 {
		return nil
	}
	out := make(map[string]int, len(cs))
	for _, c := range cs {
		out[c.site] = c.k
	}
	return out
}
