package smm

import "time"

// DroppedPrefetch is an operator's prefetch (Prefetched, Queued) that a
// Plan stopped tracking without it completing and without a FillFailed
// that gave it up: it is no longer retried there, nor listed by Fills.
// Replicator.DroppedPrefetches returns them, for the caller to forget the
// order as it does one FillFailed gives up.
type DroppedPrefetch struct {
	Node     string
	Title    string
	Attempts int // its failures so far (0 when it never failed: queued)
	// Why says, for the operator, why it was dropped.
	Why string
}

// Reasons a Plan drops the operator's prefetch (DroppedPrefetch.Why).
// Out of service is out of the plan's view (NodeView.Alive false: dead,
// unreachable, draining, weight 0) or absent from it.
const (
	// DropNotRetried: its retry (or, queued, its order) did not come
	// within RetryMax past its time, its node out of service then.
	DropNotRetried = "its node stayed out of service (dead, unreachable, draining or weight 0) past its retry time (queued: its order time) by the backoff cap (storage.retry_max)"
	// DropNotRetriedOther: its retry (or, queued, its order) did not
	// come within RetryMax past its time, its node in service, because it
	// never can (the title left the catalog, or is larger than the
	// node's disk) or the node holds a complete copy of the title (one of
	// another version kept, or one never seen filling). One that waits
	// for a fill slot, an origin channel or room there is not dropped.
	DropNotRetriedOther = "not ordered again within the backoff cap (storage.retry_max) past its retry time (queued: its order time): the title left the catalog, is larger than the node's disk, or the node holds a copy of it (of another version, kept)"
	// DropNodeLeft: its node went out of service while it filled, and
	// that was its last try (MaxHandRetries).
	DropNodeLeft = "its node went out of service (dead, unreachable, draining or weight 0) during its last try"
	// DropLastTryLost: its last try (MaxHandRetries) was not seen
	// through: not started within FillTimeout, or gone from its node's
	// reports before completing.
	DropLastTryLost = "its last try was not seen through (not started within the fill timeout, or gone from the node before completing)"
	// DropTooManyFailures: it failed MaxHandRetries times.
	DropTooManyFailures = "it failed at each of its tries"
	// DropNoOrigin: its node has no origin (NodeView.NoOrigin; it
	// registered again without one) and cannot fill it.
	DropNoOrigin = "its node registered again without an origin (node origin) and cannot fetch the title"
	// DropTooSmall: its node's egress (NodeView.EgressBps; it registered
	// again with less) is less than the title's bitrate: no viewer could
	// play the title there.
	DropTooSmall = "its node's egress_bps is less than the title's bitrate (it registered again with less): no viewer could play the title there"
)

// DroppedPrefetches returns the operator's prefetches the plans dropped
// since the last call (DroppedPrefetch), in the order they were dropped,
// and forgets them. One the operator ordered again since (Prefetched,
// Queued) is not returned.
func (r *Replicator) DroppedPrefetches() []DroppedPrefetch {
	var out []DroppedPrefetch
	for _, d := range r.dropped {
		if f := r.fills[fillKey{d.Node, d.Title}]; f == nil || !f.byHand {
			out = append(out, d)
		}
	}
	r.dropped = nil
	return out
}

// OperatorPrefetch reports whether the Replicator tracks the operator's
// prefetch (Prefetched, Queued) of title on node: in flight, queued, or
// failed and waiting for its retry.
func (r *Replicator) OperatorPrefetch(node, title string) bool {
	return r.byHand(fillKey{node, title})
}

// HandAttempts returns the failures so far of the operator's prefetch of
// title on node (OperatorPrefetch), 0 when none is tracked: the manager
// stores them with the order, for a restarted manager to restore
// (RestoreAttempts).
func (r *Replicator) HandAttempts(node, title string) int {
	if f := r.fills[fillKey{node, title}]; f != nil && f.byHand {
		return f.attempts
	}
	return 0
}

// RestoreAttempts sets the failures so far of the operator's prefetch of
// title on node, just restored by Queued or Prefetched from an order a
// manager stored before it restarted (HandAttempts), so that its next
// failure's backoff, and its giving up at MaxHandRetries, count them as
// that manager did; a negative count is taken as 0. It does nothing when
// no operator's prefetch of the pair is tracked.
func (r *Replicator) RestoreAttempts(node, title string, attempts int) {
	if r.job != nil {
		r.logged(func(r *Replicator) { r.RestoreAttempts(node, title, attempts) })
	}
	if f := r.fills[fillKey{node, title}]; f != nil && f.byHand {
		f.attempts = max(attempts, 0)
	}
}

// dropHand forgets the operator's prefetch k (f, byHand) inside a Plan,
// recording why for DroppedPrefetches.
func (r *Replicator) dropHand(k fillKey, f *fillRec, why string) {
	delete(r.fills, k)
	r.dropped = append(r.dropped, DroppedPrefetch{Node: k.node, Title: k.title, Attempts: f.attempts, Why: why})
}

// failedInPlan is fillFailed for a failure a Plan finds (its node left
// the view, its try was not seen through): a give-up of the operator's
// prefetch there is recorded for DroppedPrefetches, why saying why.
func (r *Replicator) failedInPlan(k fillKey, now time.Time, why string) {
	f := r.fills[k]
	if r.fillFailed(k, now) {
		r.dropped = append(r.dropped, DroppedPrefetch{Node: k.node, Title: k.title, Attempts: f.attempts, Why: why})
	}
}
