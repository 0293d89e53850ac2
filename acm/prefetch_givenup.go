package acm

import (
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
// restart would queue again. It reports whether it gave the order up.
func (m *Manager) fillFailedLocked(node, title, why string, now time.Time) bool {
	if !m.rep.FillFailed(node, title, now) {
		return false
	}
	m.orderDoneLocked(node, title, true)
	m.log.Warn("operator's prefetch given up: it failed at each try and is not retried (vodctl prefetch orders it again)",
		"node", node, "title", title, "failures", smm.MaxHandRetries, "last_error", why)
	return true
}
