package acm

import (
	"context"

	"vodcluster/acm/store"
)

// deleteOwn deletes s's entry from a shared store when this manager holds
// the session there (store.Session.Manager; an entry without a manager,
// written before managers were recorded, goes when this manager leads),
// in one compare-and-delete (store.Locker.DeleteSessionHeldBy). An entry
// another manager holds stays: the session's node registered there
// (which rewrote the entry), or this manager loaded it for a node that
// then failed to register here.
//
// claimedFrom, when not "", is the manager the entry named when this
// manager claimed the session (session.claimedFrom): a claim whose write
// was not made leaves the entry that manager's, and the delete is made
// over it too.
func (m *Manager) deleteOwn(ctx context.Context, s store.Session, claimedFrom string) error {
	l, ok := m.st.(store.Locker)
	if !ok {
		return m.st.DeleteSession(ctx, s.ID)
	}
	held := []string{m.holderID()}
	if m.Leader() {
		held = append(held, "")
	}
	if claimedFrom != "" {
		held = append(held, claimedFrom)
	}
	deleted, err := l.DeleteSessionHeldBy(ctx, s.ID, held...)
	if err == nil && !deleted {
		m.log.Info("session held by another manager (or gone): its entry stays", "session", s.ID)
	}
	return err
}

// putOwn writes s over its entry in a shared store when this manager
// holds the session there (the entry's Manager, as deleteOwn), or claimed
// it from the manager the entry names (claimedFrom, not ""), in one
// compare-and-set (store.Locker.PutSessionHeldBy), and reports whether
// it wrote it: a write made late (retryWrites) leaves alone an entry
// another manager took over meanwhile (the session's node registered
// there, which rewrote the entry) or deleted. A store of its own is
// written as is.
func (m *Manager) putOwn(ctx context.Context, s store.Session, claimedFrom string) (bool, error) {
	l, ok := m.st.(store.Locker)
	if !ok {
		return true, m.st.PutSession(ctx, s)
	}
	held := []string{m.holderID()}
	if m.Leader() {
		held = append(held, "")
	}
	if claimedFrom != "" {
		held = append(held, claimedFrom)
	}
	written, err := l.PutSessionHeldBy(ctx, s, held...)
	if err == nil && !written {
		m.log.Info("session held by another manager (or gone): its entry is not written", "session", s.ID)
	}
	return written, err
}

// claimLocked makes this manager the holder of s in the store
// (Manager), remembering the manager the entry names until a write of
// the claim is made (claimedFrom). It reports whether s changed (to be
// persisted).
func (m *Manager) claimLocked(s *session) bool {
	h := m.holderID()
	if s.Manager == h {
		return false
	}
	if s.claimedFrom == "" {
		s.claimedFrom = s.Manager
	}
	s.Manager = h
	return true
}

// claimMade notes that snap, written for s, is in the store: a claim it
// carries is made (claimedFrom cleared).
func (m *Manager) claimMade(s *session, snap store.Session) {
	m.mu.Lock()
	if s.claimedFrom != "" && snap.Manager == m.holderID() {
		s.claimedFrom = ""
	}
	m.mu.Unlock()
}
