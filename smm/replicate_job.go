package smm

import (
	"maps"
	"slices"
	"time"
)

// PlanJob is one Replicator Plan split in three, so that the caller's lock
// is held only to take a copy of the Replicator's state and to install
// the result, not through the computation:
//
//	j := r.StartPlan(now)   // caller's lock held: copies the state Plan reads
//	j.Run(view)             // no lock: Plan on the copy, touching nothing else
//	acts := r.FinishPlan(j) // caller's lock held: installs the copy's state, returns the orders
//
// Between StartPlan and FinishPlan the Replicator stays in use: every
// method may be called (under the caller's lock, as ever) and answers
// from the state before the plan; those that change the state (Observe,
// SessionEnded, FillDone, FillFailed, Prefetched, Evicted,
// CancelPrefetch, RestoreHolds, RestorePopularity, Seed) are also logged
// and replayed, in their order, on the plan's state by FinishPlan. The
// outcome is that of Plan at StartPlan followed by those calls: with
// none in between, exactly that of Plan(now, view). Changes made directly
// to the trackers of Popularity and Ranking during a job are lost.
//
// At most one job per Replicator at a time, and no Plan during one.
// AbortPlan drops a job (its orders are then not carried out, and the
// Replicator's state stays as if it never ran).
type PlanJob struct {
	r    *Replicator // the Replicator in use
	w    *Replicator // the copy the plan runs on
	now  time.Time
	acts []Action
	ran  bool
	// log holds the changes made to r since StartPlan, replayed on w's
	// state by FinishPlan.
	log []func(*Replicator)
}

// StartPlan begins a plan at now (caller's lock held): it copies what Plan
// reads and changes (the popularity trackers, the operator's pins, the
// prefetches in flight, the eviction holds) into a PlanJob, whose Run may
// then go on without the lock. The copy of the trackers is a copy of
// their records into buffers kept from the previous job (their indexes
// are rebuilt by Run), so StartPlan costs a memory copy of the trackers'
// records and of the small maps.
func (r *Replicator) StartPlan(now time.Time) *PlanJob {
	if r.job != nil {
		panic("smm: StartPlan while a plan job is in progress")
	}
	w := &Replicator{
		cfg: r.cfg, pop: r.pop.copyInto(r.spare[0]), rank: r.rank.copyInto(r.spare[1]), pins: r.pins.Clone(),
		plan: r.plan, fills: make(map[fillKey]*fillRec, len(r.fills)), peak: r.peak, at: r.at, stats: r.stats,
		holders: r.holders, lastTop: r.lastTop, held: maps.Clone(r.held), kept: maps.Clone(r.kept),
		nodeSite: r.nodeSite, siteK: r.siteK, unplayable: r.unplayable, // replaced by Plan, never changed in place
	}
	r.spare = [2]*Popularity{}
	for k, f := range r.fills {
		c := *f
		w.fills[k] = &c
	}
	j := &PlanJob{r: r, w: w, now: now}
	r.job = j
	return j
}

// Run plans on the job's copy with the cluster view c (as Plan). It
// needs no lock: it reads c and the job only. Call it once.
func (j *PlanJob) Run(c *ClusterView) {
	if j.ran {
		return
	}
	j.ran = true
	j.w.pop.reindex()
	j.w.rank.reindex()
	j.acts = j.w.Plan(j.now, c)
}

// FinishPlan ends job j (caller's lock held): the Replicator takes the
// plan's state, the calls made since StartPlan are replayed on it, and
// the plan's orders are returned, in order, for the caller to carry out.
// A job not Run orders nothing and changes nothing (as AbortPlan).
func (r *Replicator) FinishPlan(j *PlanJob) []Action {
	if j == nil || r.job != j {
		return nil
	}
	if !j.ran {
		r.AbortPlan(j)
		return nil
	}
	r.job = nil
	w := j.w
	// Swap the trackers' contents, not the pointers: Popularity and
	// Ranking keep returning the same trackers. The old contents are the
	// next job's buffers.
	*r.pop, *w.pop = *w.pop, *r.pop
	*r.rank, *w.rank = *w.rank, *r.rank
	r.spare = [2]*Popularity{w.pop, w.rank}
	r.plan, r.fills, r.peak, r.at, r.stats = w.plan, w.fills, w.peak, w.at, w.stats
	r.holders, r.lastTop, r.held, r.kept = w.holders, w.lastTop, w.held, w.kept
	r.nodeSite, r.siteK, r.unplayable = w.nodeSite, w.siteK, w.unplayable
	r.dropped = append(r.dropped, w.dropped...) // the plan's, DroppedPrefetches checks them against the replayed calls
	for _, f := range j.log {
		f(r)
	}
	return j.acts
}

// AbortPlan drops job j (caller's lock held): its orders are not returned
// and the Replicator keeps its own state, which the calls since StartPlan
// already changed.
func (r *Replicator) AbortPlan(j *PlanJob) {
	if j == nil || r.job != j {
		return
	}
	r.job = nil
	r.spare = [2]*Popularity{j.w.pop, j.w.rank} // buffers for the next job
}

// Planning reports whether a plan job is in progress (StartPlan called,
// FinishPlan or AbortPlan not yet).
func (r *Replicator) Planning() bool { return r.job != nil }

// logged records f, a change being made to r, for replay on the state of
// the plan in progress (r.job, not nil). Callers build f inside
// `if r.job != nil`, so a Replicator without jobs (the simulator's)
// allocates nothing.
func (r *Replicator) logged(f func(*Replicator)) {
	r.job.log = append(r.job.log, f)
}

// copyInto copies p into dst (a tracker kept for the purpose, or nil for
// a new one) and returns it. The records are copied into dst's buffer;
// the sorted title list, never changed in place, is shared; the index is
// left for reindex to rebuild, so that the copy costs one memory copy
// under the caller's lock.
func (p *Popularity) copyInto(dst *Popularity) *Popularity {
	if dst == nil {
		dst = &Popularity{}
	}
	entries, index, shares := append(dst.entries[:0], p.entries...), dst.index, dst.shares
	*dst = *p
	dst.entries, dst.index, dst.stale = entries, index, true
	dst.added = slices.Clone(p.added)
	// The sites' shares, in dst's buffer too; the list of sites is never
	// changed in place (siteIndex appends to a new slice): shared.
	dst.shares = nil
	if p.shares != nil {
		dst.shares = append(shares[:0], p.shares...)
	}
	return dst
}

// reindex rebuilds the index of a copy made by copyInto.
func (p *Popularity) reindex() {
	if !p.stale {
		return
	}
	p.stale = false
	if p.index == nil {
		p.index = make(map[string]int32, len(p.entries))
	} else {
		clear(p.index)
	}
	for i := range p.entries {
		p.index[p.entries[i].title] = int32(i)
	}
}

// Clone returns a copy of the pins that shares nothing with p.
func (p *Pins) Clone() *Pins {
	if p == nil {
		return &Pins{}
	}
	q := &Pins{}
	if p.cluster != nil {
		q.cluster = maps.Clone(p.cluster)
	}
	if p.node != nil {
		q.node = make(map[string]map[string]struct{}, len(p.node))
		for n, s := range p.node {
			q.node[n] = maps.Clone(s)
		}
	}
	return q
}
