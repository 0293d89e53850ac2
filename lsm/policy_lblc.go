package lsm

import "time"

func init() {
	Register("lblc", func(c Config) Policy { return &LBLC{table: map[string]lblcEntry{}} })
	Register("lblcr", func(c Config) Policy { return &LBLCR{table: map[string]*serverSet{}} })
}

// lblcOverloaded is the overload test of Linux IPVS lblc/lblcr adapted to
// bit/s: node i is above its overload threshold (Scheduler.Overloaded)
// while some node in service is below half of its own threshold. (The
// kernel compares active connections with the weight.) Only nodes that
// could take r count (Request.couldTake): a node of another site being
// idle, while Place keeps to r's site, is no reason to move the title
// within this one; nor is a node without an origin that lacks the title,
// or one without a feature r requires (RTSPS, UDP, ...).
func lblcOverloaded(s *Scheduler, r *Request, i int) bool {
	if !s.Overloaded(i) {
		return false
	}
	for j, n := range s.Nodes {
		if j == i || !s.InService(n) || !r.couldTake(n) {
			continue
		}
		th := n.Overload
		if th <= 0 {
			th = s.Config.Overload
		}
		if n.Utilization() < th/2 {
			return true
		}
	}
	return false
}

type lblcEntry struct {
	node    int32
	lastUse time.Time
}

// LBLC ("lblc", Linux IPVS ip_vs_lblc: locality-based least connection)
// keeps a table title -> node. A title goes to its node while that node is
// eligible and not overloaded (lblcOverloaded); otherwise, and for a title
// not in the table or unused for Config.LBLCExpiration, it goes to the wlc
// choice, which becomes the title's node. Entries unused for that long
// are deleted by a sweep every quarter of it. While Place keeps to a site
// (Request.Site) the table has a node per site and title.
type LBLC struct {
	table map[string]lblcEntry
	swept time.Time // the last sweep of the table (sweepExpired)
}

// sweepExpired deletes from table the entries unused for exp (lastUse)
// at now, every quarter of exp (swept: the last sweep), so that the table
// holds the titles asked for within about exp, not every title ever asked
// for. The kernel's ip_vs_lblc_check_expire runs every minute, deleting
// every entry unused for its expiration only every 30th run and, between,
// entries unused for 6 min while the table is over its size; a sweep tied
// to the expiration keeps the one setting.
func sweepExpired[V any](table map[string]V, lastUse func(V) time.Time, swept *time.Time, now time.Time, exp time.Duration) {
	if now.Sub(*swept) < exp/4 {
		return
	}
	*swept = now
	for k, v := range table {
		if now.Sub(lastUse(v)) > exp {
			delete(table, k)
		}
	}
}

var _ Policy = (*LBLC)(nil)

// Name returns "lblc".
func (*LBLC) Name() string { return "lblc" }

// Pick implements Policy.
func (p *LBLC) Pick(s *Scheduler, r *Request) int {
	return pickByTable(p.table, &p.swept, s, r, lblcOverloaded, func(s *Scheduler, r *Request) int { return leastPerWeight(s, r, 0) })
}

// pickByTable is the pick of a title -> node table (table, swept: LBLC's
// and LARD's): r's title goes to its node while that node is eligible and
// leave does not hold for it; otherwise, and for a title not in the table
// or unused for Config.LBLCExpiration, to fallback's choice, which becomes
// the title's node. It sweeps the table first (sweepExpired).
func pickByTable(table map[string]lblcEntry, swept *time.Time, s *Scheduler, r *Request,
	leave func(*Scheduler, *Request, int) bool, fallback func(*Scheduler, *Request) int) int {
	now, key := s.Now(), r.tableKey()
	sweepExpired(table, func(e lblcEntry) time.Time { return e.lastUse }, swept, now, s.Config.LBLCExpiration)
	if e, ok := table[key]; ok && now.Sub(e.lastUse) <= s.Config.LBLCExpiration {
		i := int(e.node)
		if i < len(s.Nodes) && s.Eligible(i, r) && !leave(s, r, i) {
			e.lastUse = now
			table[key] = e
			return i
		}
	}
	i := fallback(s, r)
	if i >= 0 {
		table[key] = lblcEntry{node: int32(i), lastUse: now}
	}
	return i
}

type serverSet struct {
	nodes   []int32
	lastMod time.Time
	lastUse time.Time
}

func (set *serverSet) add(i int, now time.Time) {
	for _, n := range set.nodes {
		if int(n) == i {
			return
		}
	}
	set.nodes = append(set.nodes, int32(i))
	set.lastMod = now
}

func (set *serverSet) remove(i int, now time.Time) {
	for k, n := range set.nodes {
		if int(n) == i {
			set.nodes = append(set.nodes[:k], set.nodes[k+1:]...)
			set.lastMod = now
			return
		}
	}
}

// LBLCR ("lblcr", Linux IPVS ip_vs_lblcr: locality-based least connection
// with replication) keeps a table title -> set of nodes. A title goes to
// the set member with the least sessions per weight; when there is none
// eligible, or it is overloaded (lblcOverloaded), the wlc choice of all
// nodes joins the set and takes the session. A set with more than one
// member that has not changed for Config.LBLCRShrink loses its most loaded
// member. Sets unused for Config.LBLCExpiration are forgotten, and
// deleted by a sweep every quarter of it. While Place keeps to a site
// (Request.Site) the set is the site's (Request.tableKey), as lblc's node
// is: one set over sites would shrink, every LBLCRShrink, the most loaded
// member whatever its site, often a site's only one, and move the title
// to a new node of that site.
type LBLCR struct {
	table map[string]*serverSet
	swept time.Time // the last sweep of the table (sweepExpired)
}

var _ Policy = (*LBLCR)(nil)

// Name returns "lblcr".
func (*LBLCR) Name() string { return "lblcr" }

// Pick implements Policy.
func (p *LBLCR) Pick(s *Scheduler, r *Request) int {
	now := s.Now()
	sweepExpired(p.table, func(set *serverSet) time.Time { return set.lastUse }, &p.swept, now, s.Config.LBLCExpiration)
	key := r.tableKey() // a set per site while Place keeps to one
	set := p.table[key]
	if set != nil && now.Sub(set.lastUse) > s.Config.LBLCExpiration {
		set.nodes, set.lastMod = set.nodes[:0], now
	}
	if set == nil {
		set = &serverSet{lastMod: now}
		p.table[key] = set
	}
	set.lastUse = now
	if len(set.nodes) > 1 && now.Sub(set.lastMod) > s.Config.LBLCRShrink {
		if m := setExtreme(s, set, nil, true); m >= 0 {
			set.remove(m, now)
		}
	}
	i := setExtreme(s, set, r, false)
	if i < 0 || lblcOverloaded(s, r, i) {
		j := leastPerWeight(s, r, 0)
		if j < 0 {
			return i
		}
		set.add(j, now)
		i = j
	}
	return i
}

// setExtreme returns the member of set with the least (most false) or most
// (most true) sessions per effective weight, among members eligible for r
// (any member in service when r is nil); -1 when none.
func setExtreme(s *Scheduler, set *serverSet, r *Request, most bool) int {
	best, bestV := -1, 0.0
	for _, m := range set.nodes {
		i := int(m)
		if i >= len(s.Nodes) {
			continue
		}
		if r != nil && !s.Eligible(i, r) {
			continue
		}
		w := s.EffectiveWeight(i)
		if w <= 0 {
			if r == nil && most {
				return i // a member out of service goes first
			}
			continue
		}
		v := float64(s.Nodes[i].Sessions) / w
		if best < 0 || (most && v > bestV) || (!most && v < bestV) {
			best, bestV = i, v
		}
	}
	return best
}
