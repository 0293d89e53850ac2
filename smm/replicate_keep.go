package smm

import "time"

// The operator's prefetch keeps its copy. A title prefetched by hand
// (Prefetched, Queued) usually has no demand yet (that is why it was
// prefetched: a promotion to come), so the plan does not place it, and
// the evictors rank unplanned titles of the lowest value first: without a
// keep, the next room made on that node, for a plan's prefetch, a fill on
// demand or the operator's next prefetch, evicted the copy just filled.
// Once its fill completes (FillDone) the copy is kept, as if pinned to
// the node, for EvictHold; the operator's eviction of it there (Evicted)
// ends the keep, and a pin keeps it for good.

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
}

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
// and false when it is not kept at now.
func (r *Replicator) KeptUntil(node, title string, now time.Time) (time.Time, bool) {
	until, ok := r.kept[fillKey{node, title}]
	if !ok || !now.Before(until) {
		return time.Time{}, false
	}
	return until, true
}

// Keeps returns the keeps still running at now (Kept), by node and title,
// for the manager's store (PopularityState.Kept).
func (r *Replicator) Keeps(now time.Time) []Hold { return holdList(r.kept, now) }

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
