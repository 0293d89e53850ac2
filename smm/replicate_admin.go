package smm

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"time"
)

// Errors of ChooseNode.
var (
	ErrUnknownTitle = errors.New("smm: unknown title")
	ErrNoRoom       = errors.New("smm: no alive node can take the title")
)

// ChooseNode picks the node for a prefetch of title ordered by the
// operator without naming one: a node the plan wants it on, else a node
// of the site whose viewers make the largest share of the title's demand
// (ObserveSite; when nodes have sites), else the alive
// node where expected load per egress plus used bytes per disk (less a
// partial of the title there, NodeView.Partials) is lowest;
// only nodes with an origin (NodeView.NoOrigin false), without a
// disk fault (NodeView.DiskFault) and whose egress (NodeView.EgressBps)
// is not less than the title's bitrate (both known), that lack the
// title and can make room for it (free space plus
// titles neither in use, pinned nor planned there). It fails with
// ErrUnknownTitle when title is not in c.Titles and ErrNoRoom when no node
// qualifies.
func (r *Replicator) ChooseNode(title string, c *ClusterView, now time.Time) (string, error) {
	info, ok := c.Titles[title]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownTitle, title)
	}
	type opt struct {
		id      string
		planned bool
		share   float64 // of the title's demand, by viewers of the node's site
		score   float64
	}
	var opts []opt
	for i := range c.Nodes {
		v := &c.Nodes[i]
		if !v.Alive || v.NoOrigin || v.DiskFault || v.ID == "" || v.DiskBytes < info.Bytes || tooSmall(v, info) || r.blocked(fillKey{v.ID, title}, now) || r.isHeld(v.ID, title, now) {
			continue
		}
		var used, free int64
		has := false
		for j := range v.Items {
			it := &v.Items[j]
			has = has || it.Title == title
			used += max(it.Bytes, 0)
			if evictable(it) && !r.pins.Protects(v.ID, it.Title) && !r.Planned(v.ID, it.Title) {
				free += max(it.Bytes, 0)
			}
		}
		if has || v.DiskBytes-used+free < info.Bytes {
			continue
		}
		// As in bestNode, the bytes of a partial of the title the node
		// keeps are bytes the prefetch does not bring to its disk.
		s := v.Utilization + float64(used-partialOf(v, title, info.Bytes))/float64(max(v.DiskBytes, 1))
		opts = append(opts, opt{v.ID, r.Planned(v.ID, title), r.pop.SiteShare(title, v.Site), s})
	}
	if len(opts) == 0 {
		return "", fmt.Errorf("%w: %q", ErrNoRoom, title)
	}
	sort.SliceStable(opts, func(i, j int) bool {
		if opts[i].planned != opts[j].planned {
			return opts[i].planned
		}
		if opts[i].share != opts[j].share {
			return opts[i].share > opts[j].share
		}
		return opts[i].score < opts[j].score
	})
	return opts[0].id, nil
}

// shiftK is how many of the most requested titles Shifted compares.
const shiftK = 32

// Shifted reports whether demand moved since the last Plan: a quarter or
// more of the shiftK most requested titles now were not among them then
// (or there was no Plan yet while there are requests). The manager calls
// it between its periodic Plans to plan early after a shift.
func (r *Replicator) Shifted(now time.Time) bool {
	top := r.shiftTop(now)
	if r.stats.Plans == 0 || len(r.lastTop) == 0 {
		return len(top) > 0
	}
	miss := 0
	for _, t := range top {
		if !r.lastTop[t] {
			miss++
		}
	}
	return miss*4 >= max(len(top), 1)
}

// topK keeps the shiftK best (title, rate) pairs offered, highest rate
// first (ties: the smaller id).
type topK []titleRate

type titleRate struct {
	t string
	r float64
}

func (a titleRate) before(b titleRate) bool { return a.r > b.r || (a.r == b.r && a.t < b.t) }

// full reports whether it holds shiftK pairs; worst is then the last.
func (k topK) full() bool { return len(k) == shiftK }

// offer inserts c when it is among the shiftK best so far.
func (k *topK) offer(c titleRate) {
	xs := *k
	if c.r <= 0 || (xs.full() && !c.before(xs[shiftK-1])) {
		return
	}
	i := sort.Search(len(xs), func(i int) bool { return c.before(xs[i]) })
	xs = append(xs, titleRate{})
	copy(xs[i+1:], xs[i:])
	xs[i] = c
	if len(xs) > shiftK {
		xs = xs[:shiftK]
	}
	*k = xs
}

// titles returns the titles kept, best first.
func (k topK) titles() []string {
	out := make([]string, len(k))
	for i, x := range k {
		out[i] = x.t
	}
	return out
}

// topTitles returns the shiftK titles with the highest demand-side rate,
// in one pass over the tracker's records, each decayed to now.
func (r *Replicator) topTitles(now time.Time) []string {
	h := r.pop.halfLife().Seconds()
	top := make(topK, 0, shiftK+1)
	r.pop.each(now, func(t string, x *pop) { top.offer(titleRate{t, x.rate * math.Ln2 / h}) })
	return top.titles()
}

// shiftTop is topTitles without decaying the tracker's records (the
// manager asks every second, under its lock: ~8 ms at 100,000 titles
// for the pass that decays each record, BenchmarkShifted). A record's
// rate now is at most its stored rate (decay only lowers it), so one whose
// stored rate is below the shiftK-th best rate now cannot enter and is
// passed with one comparison; only the others pay for the decay factor.
// Same titles, same order as topTitles.
func (r *Replicator) shiftTop(now time.Time) []string {
	h := r.pop.halfLife().Seconds()
	top := make(topK, 0, shiftK+1)
	p := r.pop
	for i := range p.entries {
		e := &p.entries[i]
		if top.full() && e.rate*math.Ln2/h < top[shiftK-1].r {
			continue
		}
		rate := e.rate
		if now.After(e.at) {
			rate *= p.factor(e.at, now)
		}
		top.offer(titleRate{e.title, rate * math.Ln2 / h})
	}
	return top.titles()
}

func (r *Replicator) rememberTop(now time.Time) {
	r.lastTop = map[string]bool{}
	for _, t := range r.topTitles(now) {
		r.lastTop[t] = true
	}
}

// PopularityState is what a Replicator knows of popularity and of its
// plan, for the manager's store: both trackers' entries at time At, the
// session statistics, the remembered peak and the last plan's replicas.
// The fields after Rank are omitted from a snapshot of an earlier
// version; restored without them, the session lengths and the peak are
// learnt again and the first plan has no earlier counts to hold to.
type PopularityState struct {
	At     time.Time         `json:"at"`
	Demand []PopularityEntry `json:"demand"` // Popularity (HalfLife)
	Rank   []PopularityEntry `json:"rank"`   // Ranking (RankHalfLife)
	// Sessions are the demand tracker's cluster-wide session statistics
	// (MeanSession's fallback for a title with few sessions of its own).
	Sessions *SessionStats `json:"sessions,omitempty"`
	// PeakBps is the remembered peak of total demand, bit/s, as of the
	// plan at PeakAt (it decays with PeakHalfLife from then).
	PeakBps float64   `json:"peak_bps,omitempty"`
	PeakAt  time.Time `json:"peak_at,omitzero"`
	// Plan is the last plan: per title, the replicas it wants and the
	// nodes it placed them on, sorted by title. The next plan holds to
	// these counts (hysteresis) and prefers these nodes, as it would had
	// the manager not restarted, and the evictors keep planned copies.
	Plan []PlannedTitle `json:"plan,omitempty"`
	// Kept are the copies the operator's prefetches filled that are still
	// kept (Replicator.Kept), with the end of each keep.
	Kept []Hold `json:"kept,omitempty"`
}

// PlannedTitle is one title's entry of the plan in a PopularityState.
type PlannedTitle struct {
	Title    string   `json:"title"`
	Replicas int      `json:"replicas"`        // ≥ 1
	Nodes    []string `json:"nodes,omitempty"` // node ids, at most Replicas
}

// SnapshotPopularity returns both popularity trackers at now, the session
// statistics, the remembered peak, the last plan and the keeps (Kept).
func (r *Replicator) SnapshotPopularity(now time.Time) PopularityState {
	ss := r.pop.SessionStats()
	s := PopularityState{At: now, Demand: r.pop.Snapshot(now), Rank: r.rank.Snapshot(now),
		Sessions: &ss, PeakBps: r.peak, PeakAt: r.at, Kept: r.Keeps(now)}
	for _, t := range slices.Sorted(maps.Keys(r.plan)) {
		p := r.plan[t]
		s.Plan = append(s.Plan, PlannedTitle{Title: t, Replicas: p.replicas, Nodes: slices.Clone(p.nodes)})
	}
	return s
}

// RestorePopularity loads a SnapshotPopularity (after a manager restart or
// a takeover, so the hottest titles are prefetched at once and the plan
// goes on from where it was). It fails on a malformed entry (a tracker's,
// Restore; the session statistics'; a negative or non-finite peak; a plan
// entry without a title, with fewer than one replica or more nodes than
// replicas, an empty or repeated node id, a title twice), and then
// changes nothing.
func (r *Replicator) RestorePopularity(s PopularityState) error {
	if r.job != nil {
		r.logged(func(r *Replicator) { _ = r.RestorePopularity(s) })
	}
	if err := (&Popularity{HalfLife: r.pop.HalfLife}).Restore(s.Demand, s.At); err != nil {
		return err
	}
	if err := (&Popularity{HalfLife: r.rank.HalfLife}).Restore(s.Rank, s.At); err != nil {
		return err
	}
	if s.Sessions != nil {
		if err := s.Sessions.check(); err != nil {
			return err
		}
	}
	if !finiteNonNeg(s.PeakBps) {
		return fmt.Errorf("smm: bad remembered peak %v bit/s", s.PeakBps)
	}
	plan, err := restoredPlan(s.Plan)
	if err != nil {
		return err
	}
	_ = r.pop.Restore(s.Demand, s.At)
	_ = r.rank.Restore(s.Rank, s.At)
	if s.Sessions != nil {
		_ = r.pop.RestoreSessionStats(*s.Sessions)
	}
	if !s.PeakAt.IsZero() {
		r.peak, r.at = s.PeakBps, s.PeakAt
	}
	if s.Sessions != nil { // a snapshot that has them: its plan, empty or not
		if plan == nil {
			plan = map[string]*titlePlan{}
		}
		r.plan = plan
		r.restoreKeeps(s.Kept)
	}
	return nil
}

// restoredPlan checks a PopularityState's plan and returns it as a plan
// (nil for none).
func restoredPlan(ps []PlannedTitle) (map[string]*titlePlan, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	plan := make(map[string]*titlePlan, len(ps))
	for _, p := range ps {
		nodes := slices.Clone(p.Nodes)
		slices.Sort(nodes)
		if p.Title == "" || p.Replicas < 1 || len(p.Nodes) > p.Replicas || plan[p.Title] != nil ||
			slices.Contains(nodes, "") || len(slices.Compact(nodes)) != len(p.Nodes) {
			return nil, fmt.Errorf("smm: bad plan entry %+v", p)
		}
		plan[p.Title] = &titlePlan{replicas: p.Replicas, nodes: slices.Clone(p.Nodes)}
	}
	return plan, nil
}

// Seed sets title's request rate at now to rate requests per second in
// both trackers: a prior for a title expected to be hot (a new release the
// operator promotes), which Plan places and prefetches like an observed
// one. It fails on an empty title or a negative or non-finite rate.
func (r *Replicator) Seed(title string, rate float64, now time.Time) error {
	if r.job != nil {
		r.logged(func(r *Replicator) { _ = r.Seed(title, rate, now) })
	}
	if err := r.pop.Seed(title, rate, now); err != nil {
		return err
	}
	return r.rank.Seed(title, rate, now)
}
