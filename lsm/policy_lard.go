package lsm

import "time"

func init() {
	Register("lard", func(Config) Policy { return &LARD{table: map[string]lblcEntry{}} })
	Register("lard/r", func(Config) Policy { return &LARDR{table: map[string]*serverSet{}} })
}

// leastUtilized returns the eligible node with the least utilization
// (reserved or measured egress over capacity), ties to the lowest index.
func leastUtilized(s *Scheduler, r *Request) int {
	best, bestU := -1, 0.0
	for i, n := range s.Nodes {
		if !s.Eligible(i, r) {
			continue
		}
		if u := n.Utilization(); best < 0 || u < bestU {
			best, bestU = i, u
		}
	}
	return best
}

// anyBelow reports whether some node in service that could take r
// (Request.couldTake: in r's site while Place keeps to it, with the
// features r requires, not a node without an origin that lacks its
// title) has utilization below u.
func anyBelow(s *Scheduler, r *Request, u float64) bool {
	for _, n := range s.Nodes {
		if s.InService(n) && r.couldTake(n) && n.Utilization() < u {
			return true
		}
	}
	return false
}

// lardMove is LARD's reassignment test for a title on node i: i is above
// T_high while some node (of r's site, while Place keeps to it) is below
// T_low, or i is at 2*T_high or more.
func lardMove(s *Scheduler, r *Request, i int) bool {
	u := s.Nodes[i].Utilization()
	return (u > s.Config.LARDHigh && anyBelow(s, r, s.Config.LARDLow)) || u >= 2*s.Config.LARDHigh
}

// LARD ("lard": locality-aware request distribution, Pai et al., ASPLOS
// 1998) keeps a table title -> node. A new title goes to the least
// utilized node; a known title stays on its node unless that node is not
// eligible or lardMove says to move it, and then goes to the least utilized
// node, which becomes its node (a node per site and title while Place
// keeps to a site, Request.Site). Load is utilization, so T_low and T_high
// (Config.LARDLow, LARDHigh) are fractions of capacity, not the paper's
// connection counts. The paper's table has no expiry; here an entry unused
// for Config.LBLCExpiration is deleted by a sweep every quarter of it, as
// lblc's are, so that the table holds the titles asked for within about
// that time, not every title ever asked for (a title dropped from the
// catalog, a site's key for a title it no longer asks for). A title asked
// for again after that is new to the table.
type LARD struct {
	table map[string]lblcEntry
	swept time.Time // the last sweep of the table (sweepExpired)
}

var _ Policy = (*LARD)(nil)

// Name returns "lard".
func (*LARD) Name() string { return "lard" }

// Pick implements Policy.
func (p *LARD) Pick(s *Scheduler, r *Request) int {
	return pickByTable(p.table, &p.swept, s, r, lardMove, leastUtilized)
}

// LARDR ("lard/r": LARD with replication, Pai et al., ASPLOS 1998) keeps a
// table title -> server set. A title goes to the least utilized member of
// its set; when there is none eligible, or lardMove holds for it, the
// least utilized node of all joins the set and takes the session. A set
// with more than one member that has not changed for Config.LBLCRShrink
// (the paper's K) loses its most utilized member. A set unused for
// Config.LBLCExpiration is deleted, as LARD's entries are. While Place
// keeps to a site the set is the site's, as LBLCR's is.
type LARDR struct {
	table map[string]*serverSet
	swept time.Time // the last sweep of the table (sweepExpired)
}

var _ Policy = (*LARDR)(nil)

// Name returns "lard/r".
func (*LARDR) Name() string { return "lard/r" }

// Pick implements Policy.
func (p *LARDR) Pick(s *Scheduler, r *Request) int {
	now := s.Now()
	sweepExpired(p.table, func(set *serverSet) time.Time { return set.lastUse }, &p.swept, now, s.Config.LBLCExpiration)
	key := r.tableKey() // a set per site while Place keeps to one
	set := p.table[key]
	if set == nil || now.Sub(set.lastUse) > s.Config.LBLCExpiration {
		set = &serverSet{lastMod: now}
		p.table[key] = set
	}
	set.lastUse = now
	best, most := -1, -1
	for _, m := range set.nodes {
		i := int(m)
		if i >= len(s.Nodes) {
			continue
		}
		u := s.Nodes[i].Utilization()
		if most < 0 || u > s.Nodes[most].Utilization() {
			most = i
		}
		if s.Eligible(i, r) && (best < 0 || u < s.Nodes[best].Utilization()) {
			best = i
		}
	}
	if best < 0 || lardMove(s, r, best) {
		if j := leastUtilized(s, r); j >= 0 {
			set.add(j, now)
			best = j
		}
	}
	if len(set.nodes) > 1 && most >= 0 && most != best && now.Sub(set.lastMod) > s.Config.LBLCRShrink {
		set.remove(most, now)
	}
	if len(set.nodes) == 0 {
		// refused with no member: no entry
		delete(p.table, key)
	}
	return best
}
