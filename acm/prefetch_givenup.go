package acm

import (
	"context"
	"slices"
	"time"

	"vodcluster/smm"
)

// fillFailedLocked tells the Replicator that the prefetch of title on
// node failed, why being its last error (mu held, with the Replicator).
// When that failure gives up the operator's prefetch there (its
// smm.MaxHandRetries-th: no longer retried, nor listed by vodctl fills),
// the order is forgotten, with a warning naming the node, the title, the
// failures and the last error: its mark (handOrders), which would
// otherwise have a later failed prefetch of the planner's own there taken
// for the operator's (queuedNodeLocked: passed over "to cancel: vodctl
// evict", which does not cancel it), and its stored order, which a
// restart would queue again. It reports whether it gave the order up. A
// failure of the operator's order (handOrders) the Replicator no longer
// tracks as the operator's (a plan took a stale copy of the title there
// for its completion) is counted as the operator's prefetch's, so it is
// retried as one, or given up.
func (m *Manager) fillFailedLocked(node, title, why string, now time.Time) bool {
	if m.handOrders[[2]string{node, title}] && !m.rep.OperatorPrefetch(node, title) {
		// The operator's order, which the Replicator no longer tracks as
		// such: a plan took a stale copy the node came back with (of
		// another version than the catalog's) for its completion. Its
		// failure is the operator's prefetch's, retried as one.
		m.rep.Prefetched(node, title, m.titles()[title].SizeBytes, now)
	}
	if !m.rep.FillFailed(node, title, now) {
		if m.handOrders[[2]string{node, title}] && m.rep.OperatorPrefetch(node, title) {
			m.saveAttemptsLater(node, title, m.rep.HandAttempts(node, title))
		}
		return false
	}
	m.orderDoneLocked(node, title, true)
	m.log.Warn("operator's prefetch given up: it failed at each try and is not retried (vodctl prefetch orders it again)",
		"node", node, "title", title, "failures", smm.MaxHandRetries, "last_error", why)
	return true
}

// forgetDroppedLocked forgets, as fillFailedLocked forgets one given up,
// each of the operator's prefetches the Replicator's plans dropped since
// the last call (smm Replicator.DroppedPrefetches: no longer retried, nor
// listed by vodctl fills, without a failure of the manager's giving it
// up): its mark and its stored order go, with a warning naming the node,
// the title, the failures so far and why (mu held, after a plan).
func (m *Manager) forgetDroppedLocked() {
	if m.rep == nil {
		return
	}
	for _, d := range m.rep.DroppedPrefetches() {
		m.orderDoneLocked(d.Node, d.Title, true)
		m.log.Warn("operator's prefetch dropped by the planner: not retried, nor listed by vodctl fills (vodctl prefetch orders it again)",
			"node", d.Node, "title", d.Title, "failures", d.Attempts, "why", d.Why)
	}
}

// saveAttemptsLater writes attempts, the failures so far of the
// operator's prefetch of title on node, into its stored order in the
// background (mu held), once opMu is free, so that a restarted manager
// restores the count (restorePrefetchesLocked) rather than start it
// again at 0, with the first backoff. An order no longer stored, or no
// longer counting attempts (carried out, cancelled, or given again
// since: a new order starts at 0), is left as it is. Closing, the count
// is not written.
func (m *Manager) saveAttemptsLater(node, title string, attempts int) {
	// Carried out, cancelled or given again (at 0) while it waited for
	// opMu: its stored entry is another order's.
	stale := func() bool { return m.rep.HandAttempts(node, title) < attempts }
	m.orderWriteLater(stale, func(ctx context.Context) {
		stored, err := m.readPrefetchOrders(ctx, true)
		if err == nil {
			i := slices.IndexFunc(stored, func(o opOrder) bool { return o.Node == node && o.Title == title })
			if i < 0 || stored[i].Attempts >= attempts {
				return
			}
			stored[i].Attempts = attempts
			err = m.putStateJSON(ctx, statePrefetches, stored)
		}
		if err != nil {
			m.log.Warn("store: failures of the operator's prefetch not saved (a restart counts them from 0)", "node", node, "title", title, "failures", attempts, "err", err)
		}
	})
}
