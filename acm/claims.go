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
// claimedOver, when not "", is the entry (its store.Session.Digest) this
// manager claimed the session over (session.claimedOver): a claim whose
// write was not made leaves the entry the other manager's, and the
// delete is made over it too while that manager did not rewrite it.
func (m *Manager) deleteOwn(ctx context.Context, s store.Session, claimedOver string) error {
	l, ok := m.st.(store.Locker)
	if !ok {
		return m.st.DeleteSession(ctx, s.ID)
	}
	held := []string{m.holderID()}
	if m.Leader() {
		held = append(held, "")
	}
	deleted, err := l.DeleteSessionHeldBy(ctx, s.ID, claimedOver, held...)
	if err == nil && !deleted {
		m.log.Info("session held by another manager (or gone): its entry stays", "session", s.ID)
	}
	return err
}

// putOwn writes s over its entry in a shared store when this manager
// holds the session there (the entry's Manager, as deleteOwn), or claimed
// it over the entry as it still is (claimedOver, not "": its Digest), in
// one compare-and-set (store.Locker.PutSessionHeldBy), and reports
// whether it wrote it: a write made late (retryWrites) leaves alone an
// entry another manager took over meanwhile (the session's node
// registered there, which rewrote the entry), rewrote since this manager
// claimed it from there, or deleted. A store of its own is written as
// is.
func (m *Manager) putOwn(ctx context.Context, s store.Session, claimedOver string) (bool, error) {
	l, ok := m.st.(store.Locker)
	if !ok {
		return true, m.st.PutSession(ctx, s)
	}
	held := []string{m.holderID()}
	if m.Leader() {
		held = append(held, "")
	}
	written, err := l.PutSessionHeldBy(ctx, s, claimedOver, held...)
	if err == nil && !written {
		m.log.Info("session held by another manager (or gone): its entry is not written", "session", s.ID)
	}
	return written, err
}

// claimLocked makes this manager the holder of s in the store
// (Manager), remembering the entry it claims it over, the one last read,
// which names another manager (s.Digest), until a write of the claim is
// made (claimedOver). It reports whether s changed (to be persisted).
func (m *Manager) claimLocked(s *session) bool {
	h := m.holderID()
	if s.Manager == h {
		return false
	}
	s.claimedOver = s.Digest
	s.Manager = h
	return true
}

// claimMade notes that snap, written for s, is in the store: a claim it
// carries is made (claimedOver cleared), and so is a rewrite.
func (m *Manager) claimMade(s *session, snap store.Session) {
	m.mu.Lock()
	if s.claimedOver != "" && snap.Manager == m.holderID() {
		s.claimedOver = ""
	}
	s.rewrite = false // in the store now
	m.mu.Unlock()
}
