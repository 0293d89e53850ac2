package smm

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// ForgetNode forgets node at now: the operator decommissioned it (the
// manager removed it from its scheduler). Its prefetches still in flight
// count as failed (FillFailed: the node is gone with them) and, with
// those waiting for a retry, are dropped, so none is retried on a node
// registering later under the same id; its eviction holds and keeps
// (Kept) go, and it leaves the last plan's nodes (dropPlanned; the next
// Plan, which places nothing on a node absent from the view, places its
// replicas elsewhere). It returns how many prefetches and holds it
// dropped.
//
// It changes the state through FillFailed, FillDone, RestoreHolds and
// logged changes, so it may be called while a plan job is in progress; a
// prefetch that job orders on node is then not dropped: call it between
// plans.
func (r *Replicator) ForgetNode(node string, now time.Time) (fills, holds int) {
	var keys []fillKey
	for k := range r.fills {
		if k.node == node {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b fillKey) int { return strings.Compare(a.title, b.title) })
	for _, k := range keys {
		if f := r.fills[k]; f != nil && !f.backoff {
			r.FillFailed(k.node, k.title, now)
		}
		r.FillDone(k.node, k.title, now) // a backoff goes without counting as done
	}
	all := r.Holds(now)
	kept := all[:0:0]
	for _, h := range all {
		if h.Node != node {
			kept = append(kept, h)
		}
	}
	if len(kept) != len(all) {
		r.RestoreHolds(kept)
	}
	if r.job != nil {
		r.logged(func(r *Replicator) { r.pruneKeeps(now, node) })
	}
	r.pruneKeeps(now, node)
	r.dropPlanned(node)
	return len(keys), len(all) - len(kept)
}

// dropPlanned takes node out of the last plan's nodes (their replica
// counts stay: the next Plan places them elsewhere), so that a snapshot
// taken before that plan (SnapshotPopularity, PlanNodes after a restart)
// no longer names it. The plan map is replaced, never changed in place
// (plan jobs and PopularityCopy share it); a plan job in progress has the
// change replayed on its result.
func (r *Replicator) dropPlanned(node string) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.dropPlanned(node) })
	}
	var next map[string]*titlePlan
	for t, p := range r.plan {
		if !p.has(node) {
			continue
		}
		if next == nil {
			next = maps.Clone(r.plan)
		}
		next[t] = &titlePlan{replicas: p.replicas, nodes: slices.DeleteFunc(slices.Clone(p.nodes), func(n string) bool { return n == node })}
	}
	if next != nil {
		r.plan = next
	}
}
