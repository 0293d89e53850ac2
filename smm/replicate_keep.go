package smm

import (
	"slices"
	"time"
)

// The operator's prefetch keeps its copy. A title prefetched by hand
// (Prefetched, Queued) usually has no demand yet (that is why it was
// prefetched: a promotion to come), so the plan does not place it, and
// the evictors rank unplanned titles of the lowest value first: without a
// keep, the next room made on that node, for a plan's prefetch, a fill on
// demand or the operator's next prefetch, evicted the copy just filled.
// Once its fill completes (FillDone) the copy is kept, as if pinned to
// the node, for EvictHold; the operator's eviction of it there (Evicted)
// ends the keep, and a pin keeps it for good.
//
// The manager stores the keeps in its popularity snapshot
// (PopularityState.Kept), which it saves as soon as a keep starts
// (KeepsStarted), so that a restart or a takeover right after the fill
// keeps the copy too. The end of a keep by the operator's eviction needs
// no such save: the eviction's hold (Holds), which the manager saves at
// once, outlasts the keep it ended (both last EvictHold, the hold from
// the later time), and a pair held is not kept (KeptUntil), so a keep
// restored from a snapshot older than the eviction protects nothing.

// keep starts the keep of k's copy at now, its fill (f, not yet
// forgotten) completed, when that fill was the operator's.
func (r *Replicator) keep(k fillKey, f *fillRec, now time.Time) {
	if f == nil || !f.byHand || f.backoff || r.cfg.EvictHold <= 0 {
		return
	}
	if r.kept == nil {
		r.kept = map[fillKey]time.Time{}
	}
	r.kept[k] = now.Add(r.cfg.EvictHold)
	r.keepsStarted++
}

// KeepsStarted returns how many keeps have started (Kept) in the
// Replicator's life, a keep started again by a second fill included: the
// manager compares it before and after a load report to save its
// popularity snapshot, which holds the keeps, at once when one started.
// It only grows; a keep started during a plan job may count twice.
func (r *Replicator) KeepsStarted() uint64 { return r.keepsStarted }

// Kept reports whether node's copy of title, filled by the operator's
// prefetch, is still kept at now: not evicted to make room (the
// Replicator's own evictions and Storage's Evictor treat it as pinned)
// before EvictHold from the fill's completion, unless the operator evicts
// it.
func (r *Replicator) Kept(node, title string, now time.Time) bool {
	_, ok := r.KeptUntil(node, title, now)
	return ok
}

// KeptUntil returns when the keep of node's copy of title ends (Kept),
// and false when it is not kept at now. A copy the operator's eviction
// holds off node (Held) is not kept: Evicted ends the keep, and a keep
// restored from a snapshot taken before the eviction (RestorePopularity,
// the hold restored by RestoreHolds) is over too.
func (r *Replicator) KeptUntil(node, title string, now time.Time) (time.Time, bool) {
	until, ok := r.kept[fillKey{node, title}]
	if !ok || !now.Before(until) || r.isHeld(node, title, now) {
		return time.Time{}, false
	}
	return until, true
}

// Keeps returns the keeps still running at now (Kept), by node and title,
// for the manager's store (PopularityState.Kept).
func (r *Replicator) Keeps(now time.Time) []Hold {
	out := holdList(r.kept, now)
	return slices.DeleteFunc(out, func(h Hold) bool { return r.isHeld(h.Node, h.Title, now) })
}

// restoreKeeps replaces the keeps with hs (Keeps, from a snapshot);
// entries with an empty node or title are skipped.
func (r *Replicator) restoreKeeps(hs []Hold) { r.kept = holdMap(hs) }

// pruneKeeps forgets the keeps ended at now, and those of node when node
// is not "" (a node forgotten).
func (r *Replicator) pruneKeeps(now time.Time, node string) {
	for k, until := range r.kept {
		if !now.Before(until) || k.node == node {
			delete(r.kept, k)
		}
	}
}
