package smm

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Replicator is the default Planner: popularity-driven replication,
// prefetch and eviction. Each Plan
//
//  1. estimates every title's expected demand in bit/s (Popularity.Demand)
//     and scales it to the cluster's remembered peak, so replicas are
//     planned for the evening, not for the hour at hand;
//  2. gives each title a replica count, the number of nodes whose egress
//     at TargetUtilization carries that demand (the mean egress of the
//     nodes with an origin: one without, NodeView.NoOrigin, can hold no
//     new replica), with hysteresis (a replica is added above AddAbove
//     and dropped below DropBelow times what the replicas carry): a hot
//     title on several nodes, the tail on one; only nodes that can stream
//     the title count (a node whose egress is less than its bitrate holds
//     no replica of it, and a title no node can stream none:
//     replicate_egress.go);
//  3. chooses the titles the cluster keeps, by value per byte of disk
//     (request rate times (SetupBytes+size)/size, as gdsf), until
//     DiskFill of the disks is planned; titles already placed keep their
//     place against up to KeepBonus times better ones; pinned titles first;
//  4. places the replicas, most demanded first: on the nodes that already
//     hold the title, then on the node where expected load per egress and
//     planned bytes per disk are lowest (a partial of the title there,
//     NodeView.Partials, counts as bytes already on its disk); when nodes
//     have sites, a title's count is first apportioned to the sites by
//     their viewers' share of its demand (ObserveSite), each site's
//     replicas placed on its own nodes, the rest anywhere
//     (replicate_sites.go);
//  5. orders the prefetches the plan lacks, most urgent first, within the
//     free origin channels, MaxFillsPerNode and the off-peak rule, each
//     after the evictions that make its room (titles not planned on that
//     node, never in use or pinned, the lowest gdsf priority first), and
//     retries a failed prefetch with capped exponential backoff.
//
// Titles are never evicted just because the plan dropped them: they stay
// until their room is needed, by a prefetch or by a fill on demand (the
// Evictor of Storage ranks unplanned titles first), so a plan that moves
// costs no origin bytes until it must. Not safe for concurrent use; a
// Plan can be split so that its computation runs without the caller's
// lock (StartPlan, PlanJob).
type Replicator struct {
	cfg  ReplicatorConfig
	pop  *Popularity // demand: HalfLife
	rank *Popularity // value: RankHalfLife
	pins *Pins

	plan  map[string]*titlePlan // title -> planned replicas
	fills map[fillKey]*fillRec  // prefetches ordered and not yet done, and backoffs
	peak  float64               // remembered peak of total demand, bit/s
	at    time.Time             // last Plan
	stats ReplicatorStats

	// From the last view: which alive nodes hold (or fill) each title.
	holders map[string][]string
	lastTop map[string]bool // most requested titles at the last Plan
	// held are the (node, title) pairs the operator evicted by hand, with
	// the end of their hold (EvictHold): not planned there until then.
	held map[fillKey]time.Time
	// kept are the (node, title) copies the operator's prefetches filled,
	// with the end of their keep (EvictHold): not evicted for room until
	// then (replicate_keep.go).
	kept map[fillKey]time.Time
	// keepsStarted counts the keeps started (KeepsStarted); not part of
	// a plan job's copy (a keep started during a job counts again when
	// FinishPlan replays its FillDone).
	keepsStarted uint64
	// unplayable are the last view's copies on a node too small to
	// stream their title (replicate_egress.go): no copies for Copies; nil
	// when none. Replaced by Plan, never changed in place.
	unplayable map[fillKey]bool

	// Sites (replicate_sites.go): nodeSite maps the last view's alive
	// nodes to their sites, nil when none has one; siteK is, per title,
	// the replicas the plan gives each site (nil without sites); sites
	// are the sites of the alive nodes during a Plan (nil without, and
	// between Plans).
	nodeSite map[string]string
	siteK    map[string][]siteCount
	sites    *planSites

	// dropped are the operator's prefetches the plans dropped since the
	// last DroppedPrefetches.
	dropped []DroppedPrefetch

	job   *PlanJob       // the plan in progress (StartPlan), nil when none
	spare [2]*Popularity // buffers for the next job's copies of pop and rank
}

// titlePlan is one title's planned placement.
type titlePlan struct {
	replicas int
	nodes    []string // planned nodes, len <= replicas
}

// ReplicatorStats counts what a Replicator did.
type ReplicatorStats struct {
	Plans       int `json:"plans"`
	Prefetches  int `json:"prefetches"`   // prefetch actions ordered
	Evictions   int `json:"evictions"`    // evict actions ordered
	Moves       int `json:"moves"`        // Prefetches + Evictions: placement moves
	PlanChanges int `json:"plan_changes"` // (node, title) pairs that entered or left the plan
	FillsDone   int `json:"fills_done"`
	FillsFailed int `json:"fills_failed"`
	Retries     int `json:"retries"` // prefetches ordered again after a failure
}

var _ Planner = (*Replicator)(nil)

// NewReplicator returns a Replicator with cfg (zero fields take the
// defaults) and the operator's pins (nil: none; the Replicator keeps the
// pointer, so Pin and Unpin on it take effect at the next Plan). It fails
// on a parameter out of range.
func NewReplicator(cfg ReplicatorConfig, pins *Pins) (*Replicator, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if pins == nil {
		pins = &Pins{}
	}
	return &Replicator{
		cfg: c, pop: NewPopularity(c.HalfLife), rank: NewPopularity(c.RankHalfLife), pins: pins,
		plan: map[string]*titlePlan{}, fills: map[fillKey]*fillRec{},
		holders: map[string][]string{}, held: map[fillKey]time.Time{},
	}, nil
}

// Config returns the configuration in use, defaults filled in.
func (r *Replicator) Config() ReplicatorConfig { return r.cfg }

// Popularity returns the popularity tracker behind expected demand, for
// persistence (Snapshot, Restore) and priors (Seed).
func (r *Replicator) Popularity() *Popularity { return r.pop }

// Ranking returns the long-memory popularity tracker that ranks titles by
// value, for persistence and priors like Popularity.
func (r *Replicator) Ranking() *Popularity { return r.rank }

// Value returns title's request rate at now in requests per second as the
// ranking sees it (RankHalfLife): the frequency behind gdsf's priority.
func (r *Replicator) Value(title string, now time.Time) float64 { return r.rank.Rate(title, now) }

// Pins returns the operator's pins the Replicator honours.
func (r *Replicator) Pins() *Pins { return r.pins }

// Stats returns the counters so far.
func (r *Replicator) Stats() ReplicatorStats { return r.stats }

// Observe implements Planner: one request for title, by a viewer of no
// site in particular (ObserveSite with site "").
func (r *Replicator) Observe(title string, now time.Time) {
	r.ObserveSite(title, "", now)
}

// ObserveSite implements SitePlanner: one request for title by a viewer
// of site ("" = none or not known). The demand tracker keeps each site's
// share of the title's demand (Popularity.ObserveSite), from which Plan
// apportions the title's replicas to the sites of the nodes; the ranking
// of titles by value stays the cluster's.
func (r *Replicator) ObserveSite(title, site string, now time.Time) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.ObserveSite(title, site, now) })
	}
	r.pop.ObserveSite(title, site, now)
	r.rank.Observe(title, now)
}

// SessionEnded records that a session of title (lasting duration seconds,
// 0 when unknown) ended after watched seconds, to learn how long sessions
// last (Popularity.ObserveSession).
func (r *Replicator) SessionEnded(title string, watched, duration float64, now time.Time) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.SessionEnded(title, watched, duration, now) })
	}
	r.pop.ObserveSession(title, watched, duration, now)
}

// Evicted tells the Replicator that the operator evicted title from node
// at now: from the next plan on, the plan does not place it there again
// for EvictHold (unless it is pinned there), so the eviction is not undone
// at the next plan, and ChooseNode does not pick that node for it. An
// operator's prefetch of it there (Prefetched) lifts the hold. The
// manager persists them (Holds, RestoreHolds). It ends the keep of the
// copy there (Kept). A prefetch of it there in flight (the operator's or
// a plan's), which the operator's eviction cancels on the node, and the
// operator's that failed and waits for its retry, are forgotten: neither
// counted failed nor retried.
func (r *Replicator) Evicted(node, title string, now time.Time) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.Evicted(node, title, now) })
	}
	k := fillKey{node, title}
	r.held[k] = now.Add(r.cfg.EvictHold)
	delete(r.kept, k) // the operator wants it gone: no keep
	if f := r.fills[k]; f != nil && (!f.backoff || f.byHand) {
		delete(r.fills, k) // cancelled, or failed: not retried there
	}
}

// LiftHolds ends the operator's eviction holds (Evicted) of title on node,
// or with node "" on every node, for the operator's later pin of title
// there (to node, or to the cluster): the pin is the operator's later
// word, and the title may be planned there again, also once it is
// unpinned. It returns the nodes whose hold it ended (held at now), in
// order.
func (r *Replicator) LiftHolds(node, title string, now time.Time) []string {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.LiftHolds(node, title, now) })
	}
	var lifted []string
	for k := range r.held {
		if k.title != title || (node != "" && k.node != node) {
			continue
		}
		if r.isHeld(k.node, k.title, now) {
			lifted = append(lifted, k.node)
		}
		delete(r.held, k)
	}
	slices.Sort(lifted)
	return lifted
}

// Held reports whether an operator's eviction keeps title off node at
// now (Evicted).
func (r *Replicator) Held(node, title string, now time.Time) bool { return r.isHeld(node, title, now) }

// CancelPrefetch forgets the operator's prefetch of title on node that
// failed and waits for its retry, or, with nodeDown (the node misses its
// heartbeats), that the node's death cut short; it reports whether there
// was one.
func (r *Replicator) CancelPrefetch(node, title string, nodeDown bool) bool {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.CancelPrefetch(node, title, nodeDown) })
	}
	k := fillKey{node, title}
	if f := r.fills[k]; f != nil && f.byHand && (f.backoff || nodeDown) {
		delete(r.fills, k)
		return true
	}
	return false
}

// Hold is an operator's eviction hold (Replicator.Evicted): title is not
// planned on node before Until.
type Hold struct {
	Node  string    `json:"node"`
	Title string    `json:"title"`
	Until time.Time `json:"until"`
}

// Holds returns the eviction holds still running at now, by node and
// title, for the manager's store.
func (r *Replicator) Holds(now time.Time) []Hold { return holdList(r.held, now) }

// holdList returns the entries of m (pair -> end) still running at now,
// by node and title.
func holdList(m map[fillKey]time.Time, now time.Time) []Hold {
	var out []Hold
	for k, until := range m {
		if now.Before(until) {
			out = append(out, Hold{Node: k.node, Title: k.title, Until: until})
		}
	}
	slices.SortFunc(out, func(a, b Hold) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.Title, b.Title)
	})
	return out
}

// holdMap is hs as a map (pair -> end), entries with an empty node or
// title skipped.
func holdMap(hs []Hold) map[fillKey]time.Time {
	m := make(map[fillKey]time.Time, len(hs))
	for _, h := range hs {
		if h.Node != "" && h.Title != "" {
			m[fillKey{h.Node, h.Title}] = h.Until
		}
	}
	return m
}

// RestoreHolds replaces the eviction holds with hs (from Holds, possibly
// of another manager). Holds with an empty node or title are skipped.
func (r *Replicator) RestoreHolds(hs []Hold) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.RestoreHolds(hs) })
	}
	r.held = holdMap(hs)
}

// isHeld reports whether the operator's eviction of title from node still
// keeps it from being planned there at now.
func (r *Replicator) isHeld(node, title string, now time.Time) bool {
	until, ok := r.held[fillKey{node, title}]
	return ok && now.Before(until)
}

// Planned reports whether the current plan places title on node.
func (r *Replicator) Planned(node, title string) bool {
	if p := r.plan[title]; p != nil {
		for _, n := range p.nodes {
			if n == node {
				return true
			}
		}
	}
	return false
}

// PlannedNodes returns the nodes the current plan places title on, and the
// replica count it wants.
func (r *Replicator) PlannedNodes(title string) (nodes []string, replicas int) {
	if p := r.plan[title]; p != nil {
		return append([]string(nil), p.nodes...), p.replicas
	}
	return nil, 0
}

// PlanNodes returns the nodes the current plan places any title on,
// sorted: after RestorePopularity, the nodes of the restored plan, which
// a manager starting again waits for before its first plan (a plan that
// sees only some of them would fetch again, elsewhere, the copies the
// others hold).
func (r *Replicator) PlanNodes() []string {
	seen := map[string]bool{}
	for _, p := range r.plan {
		for _, n := range p.nodes {
			seen[n] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Copies returns how many alive nodes other than node held or were filling
// title at the last Plan; when node has a site, how many of its site's
// nodes did (a copy at another site does not serve node's site's viewers
// first: it is no spare of node's copy). A copy on a node whose egress is
// less than the title's bitrate (replicate_egress.go) is not counted: no
// viewer of it is sent there.
func (r *Replicator) Copies(node, title string) int {
	site := ""
	if r.nodeSite != nil {
		site = r.nodeSite[node]
	}
	n := 0
	for _, h := range r.holders[title] {
		if h != node && (site == "" || r.nodeSite[h] == site) && !r.unplayable[fillKey{h, title}] {
			n++
		}
	}
	return n
}

// demandOf is one title's figures for one Plan.
type demandOf struct {
	id         string
	info       TitleInfo
	rate       float64 // req/s now
	demand     float64 // bit/s now
	peak       float64 // bit/s scaled to the remembered peak
	value      float64 // gdsf priority: long-memory rate*(setup+size)/size
	pinned     bool    // pinned to the cluster or to a node
	nodePinned bool    // pinned to a node
	planned    bool    // in the previous plan
	popIdx     int32   // its record in the demand tracker (its sites' shares), -1 when none
}

// Plan implements Planner. It must not be called during a plan job
// (StartPlan to FinishPlan or AbortPlan): it panics.
func (r *Replicator) Plan(now time.Time, c *ClusterView) []Action {
	if r.job != nil {
		panic("smm: Plan while a plan job is in progress")
	}
	r.stats.Plans++
	if c == nil {
		return nil
	}
	alive := r.sync(now, c)
	r.sites = r.groupSites(alive)
	ds := r.demands(now, c)
	r.at = now
	r.rememberTop(now)
	if len(alive) == 0 {
		return nil
	}
	r.place(ds, alive, c)
	acts := r.prefetches(now, ds, alive, c)
	r.sites = nil // it holds the view's nodes
	return acts
}

// demands estimates every known title's demand, scaled to the peak.
func (r *Replicator) demands(now time.Time, c *ClusterView) []demandOf {
	r.pop.Prune(0.01, now)
	r.rank.Prune(0.01, now)
	pins := r.pins.List()
	ds := make([]demandOf, 0, r.rank.Len()+len(pins))
	var seen map[string]bool // pinned titles added (the ranked ones are not repeated)
	add := func(id string, rankRate float64) {
		info, ok := c.Titles[id]
		if !ok || info.Bytes <= 0 {
			return
		}
		d := demandOf{id: id, info: info}
		d.rate, d.demand, d.popIdx = r.pop.rateAndDemand(id, info.Bitrate, info.Duration, now)
		if !(d.demand >= 0) || math.IsInf(d.demand, 0) {
			d.demand = 0 // a catalog entry with a nonsensical duration
		}
		s := float64(info.Bytes)
		d.value = rankRate * (float64(r.cfg.SetupBytes) + s) / s
		d.planned = r.plan[id] != nil
		ds = append(ds, d)
	}
	rankPerS := math.Ln2 / r.rank.halfLife().Seconds()
	r.rank.each(now, func(id string, x *pop) { add(id, x.rate*rankPerS) })
	for _, p := range pins {
		if r.rank.has(p.Title) || seen[p.Title] {
			continue // added with the ranked titles, or for another pin
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[p.Title] = true
		add(p.Title, 0)
	}
	nodePinned := map[string]bool{}
	for _, p := range pins {
		if p.Node != "" {
			nodePinned[p.Title] = true
		}
	}
	for i := range ds {
		ds[i].nodePinned = nodePinned[ds[i].id]
		ds[i].pinned = r.pins.Pinned("", ds[i].id) || ds[i].nodePinned
	}
	// Pinned first (pinned to a node before pinned to the cluster only,
	// so that a cluster pin is placed knowing which disks the node pins
	// take), then by value per byte (titles in the plan with their bonus),
	// then by id for a deterministic order. The keys are sorted as
	// indexes: cheaper than moving the records.
	keys := make([]float64, len(ds))
	order := make([]int32, len(ds))
	for i := range ds {
		order[i] = int32(i)
		keys[i] = ds[i].value
		if ds[i].planned {
			keys[i] *= r.cfg.KeepBonus
		}
	}
	slices.SortFunc(order, func(x, y int32) int {
		a, b := &ds[x], &ds[y]
		if a.pinned != b.pinned {
			if a.pinned {
				return -1
			}
			return 1
		}
		if a.nodePinned != b.nodePinned {
			if a.nodePinned {
				return -1
			}
			return 1
		}
		if ka, kb := keys[x], keys[y]; ka != kb {
			if ka > kb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]demandOf, len(ds))
	var total float64 // summed in that order: the same whatever the trackers' layout
	for i, k := range order {
		out[i] = ds[k]
		total += out[i].demand
	}
	// Remember the peak of total demand, decaying with PeakHalfLife.
	if !r.at.IsZero() && now.After(r.at) {
		r.peak *= math.Exp2(-now.Sub(r.at).Seconds() / r.cfg.PeakHalfLife.Seconds())
	}
	r.peak = math.Max(r.peak, total)
	scale := 1.0
	if total > 0 {
		scale = r.peak / total
	}
	for i := range out {
		out[i].peak = out[i].demand * scale
	}
	return out
}
