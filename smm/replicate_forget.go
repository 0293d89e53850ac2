package smm

import (
	"slices"
	"strings"
	"time"
)

// ForgetNode forgets node at now: the operator decommissioned it (the
// manager removed it from its scheduler). Its prefetches still in flight
// count as failed (FillFailed: the node is gone with them) and, with
// those waiting for a retry, are dropped, so none is retried on a node
// registering later under the same id; its eviction holds go. The plan
// places nothing on a node absent from the view, so the next Plan leaves
// it out. It returns how many prefetches and holds it dropped.
//
// It changes the state through FillFailed, FillDone and RestoreHolds, so
// it may be called while a plan job is in progress; a prefetch that job
// orders on node is then not dropped: call it between plans.
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
	return len(keys), len(all) - len(kept)
}
