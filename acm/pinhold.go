package acm

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/status"
)

// liftHoldsForPin ends the operator's eviction holds of title on node, or
// with node "" on every node (smm.Replicator.LiftHolds), now that the
// operator pinned it there (pinsMu held): the pin is the operator's later
// word, and the title is planned there again, also once unpinned (the
// hold applied again then). The stored holds are written as the
// Replicator has them (saveHoldOpLocked), so that a restarted manager
// does not bring them back. It returns the nodes whose hold ended, and a
// note for the pin's answer when a hold could not be lifted or its
// store entry not removed ("" otherwise). Without the storage planner
// there are no holds.
func (m *Manager) liftHoldsForPin(ctx context.Context, node, title string) (lifted []string, note string) {
	if m.rep == nil {
		return nil, ""
	}
	// opMu through the holds' change and their writes (pinsMu first: as
	// ForgetNode takes them).
	if err := m.adminLock(ctx, &m.opMu, "eviction hold not lifted"); err != nil {
		return nil, "; its eviction holds not lifted (" + status.Convert(err).Message() + "): they give way to the pin while it stands"
	}
	defer m.opMu.Unlock()
	unlock := m.lockBetweenPlans()
	lifted = m.rep.LiftHolds(node, title, m.now())
	unlock()
	for _, id := range lifted {
		if err := m.saveHoldOpLocked(ctx, id, title); err != nil {
			m.log.Error("store: lifted eviction hold not removed", "node", id, "title", title, "err", err)
			note = fmt.Sprintf(" (the stored hold not removed, %s: a manager restart brings it back)", m.adminStoreNote(ctx, err))
		}
	}
	if len(lifted) > 0 {
		m.log.Info("eviction holds lifted by the operator's pin", "title", title, "nodes", strings.Join(lifted, ","))
	}
	return lifted, note
}
