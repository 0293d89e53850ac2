package acm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"vodcluster/proto/durtext"
)

// persist writes s's current state to the store (or deletes it when it
// ended). Concurrent persists of one session are serialised and each
// writes the state of its own moment, so the store ends with the latest.
func (m *Manager) persist(s *session) error {
	return m.persistBy(s, time.Now().Add(m.persistWait), persistOne)
}

// defaultPersistWait is Manager.persistWait's default: it bounds a store
// call made off the front door (persist, persistAll): a slow store is
// given time, a stalled one is noted (noteStall) after it.
const defaultPersistWait = 10 * time.Second

// persistMode is how persistBy treats a store taken as stalled and a
// failed write.
type persistMode int

const (
	// persistOne (persist): the store is asked even when taken as
	// stalled; a write that fails is made again on the store's return.
	persistOne persistMode = iota
	// persistInBatch (persistAll): as persistOne, but with the store
	// taken as stalled no round trip is made, nor a wait for another
	// write of the session (its persist lock): the write waits for the
	// store's return.
	persistInBatch
	// persistFrontDoor (persistFront): as persistInBatch for deletes; a
	// live session's write that fails is the request's refusal, not made
	// again (the caller ends the session).
	persistFrontDoor
	// persistOperator (persistAllBy with an operator's deadline): as
	// persistInBatch, within a budget the caller's own waits (for its
	// locks) may have used up: a call that the deadline ends having had
	// less than StoreTimeout is not taken as the store stalling (the
	// health check reads it at once instead: inBudget).
	persistOperator
)

// batch reports whether mode is persistInBatch or persistOperator.
func (mode persistMode) batch() bool { return mode == persistInBatch || mode == persistOperator }

// persistFront is persist for a front-door request's store work (its
// new session, the sessions it ends, a redirect not delivered): the
// store's answer is waited for StoreTimeout at most. A store that does
// not answer within it fails the call with errStoreTimeout and is taken
// as unavailable (noteStore), stalled (health.storeStalled): the next
// requests are refused at once (admit), and until a health check reads
// it again persistFront makes no round trip: a write fails at once with
// errStoreDown, and an ended session's delete waits for the store's
// return (retryLater). A store that failed quickly (a refused
// connection) is still asked: its answer, as quick, may be its return.
func (m *Manager) persistFront(s *session) error {
	return m.persistBy(s, time.Now().Add(m.StoreTimeout), persistFrontDoor)
}

// persistBy is persist with its store call bounded by deadline, in mode.
func (m *Manager) persistBy(s *session, deadline time.Time, mode persistMode) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	stalledAtStart := mode != persistOne && m.health.storeStalled.Load()
	if stalledAtStart && !s.tryLockPersist() {
		// The store is taken as stalled and another write of the
		// session, which waits for it, holds its persist lock: as the
		// round trip, the wait for that write (up to its own timeout,
		// 10 s off the front door) is not made. This write waits for
		// the store's return, after that one (retryWrites), or fails at
		// once (a live session's at the front door).
		m.mu.Lock()
		snap, gone := s.Session, s.ended
		m.mu.Unlock()
		if gone || mode.batch() {
			m.retryLater(s, snap)
		}
		return errStoreDown
	}
	if !stalledAtStart && !s.lockPersist(ctx) {
		// A persist of the session before this one still waits for the
		// store (it notes the store's outcome itself): this one's write
		// waits for the store's return, after it (retryWrites).
		m.mu.Lock()
		snap, gone := s.Session, s.ended
		m.mu.Unlock()
		err := fmt.Errorf("store: session %s: waiting for its previous write: %w", snap.ID, ctx.Err())
		if mode == persistFrontDoor {
			err = fmt.Errorf("%w (%s): session %s: its previous write still waits for the store", errStoreTimeout, durtext.Written(m.StoreTimeout), snap.ID)
		}
		m.log.Error("store: session not persisted", "session", snap.ID, "err", err)
		if gone || mode != persistFrontDoor {
			m.retryLater(s, snap)
		}
		return err
	}
	defer s.unlockPersist()
	m.mu.Lock()
	snap, gone, forget := s.Session, s.ended, s.forget
	cur := m.sessions[snap.ID]
	m.mu.Unlock()
	if gone && cur != nil && cur != s {
		// The session is back in the table as another entry, loaded
		// afresh from the store (its node registered again and plays it,
		// or a takeover) while this delete waited (queued behind a slow
		// store: persistLater): the store's entry is that one's now.
		return nil
	}
	if mode != persistOne && m.health.storeStalled.Load() {
		if gone || mode.batch() {
			m.retryLater(s, snap)
		}
		return errStoreDown
	}
	budget := time.Until(deadline) // what the call has
	var err error
	switch {
	case gone && forget:
		// Not over a claim's entry (claimedOver): an orphan's node, a
		// no-show's viewer, may be with the manager it was claimed from.
		err = m.deleteOwn(ctx, snap, "")
	case gone:
		err = m.st.DeleteSession(ctx, snap.ID)
	default:
		if err = m.st.PutSession(ctx, snap); err == nil {
			m.claimMade(s, snap)
		}
	}
	stalled := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	if stalled && mode == persistOperator && budget < m.StoreTimeout {
		// The operator's budget ran out, not the store: a store that
		// answers takes longer than what was left. The health check
		// reads it now, each read given StoreTimeout (healthLoop): that
		// read, not this call, tells whether it stalls, and, when it
		// answers, retries this write (retryWrites).
		m.log.Warn("store: session not persisted within the operator's call's time left: written when the health check reads the store",
			"session", snap.ID, "time_left", budget, "err", err)
		m.retryLater(s, snap)
		m.kickHealth()
		return err
	}
	if stalled {
		m.noteStall()
	}
	m.noteStoreWrite(err)
	if err != nil {
		if mode == persistFrontDoor && stalled {
			// Not wrapping err: a deadline is not the client's (outcome).
			err = fmt.Errorf("%w (%s): %v", errStoreTimeout, durtext.Written(m.StoreTimeout), err)
		}
		m.log.Error("store: session not persisted", "session", snap.ID, "err", err)
		if gone || mode != persistFrontDoor {
			m.retryLater(s, snap)
		}
	}
	return err
}

// persistAll persists each session (after a batch of changes under mu)
// and returns how many were not written. Each call is bounded as
// persist's, but once the store is taken as stalled (a call timed out,
// this batch's or another's: health.storeStalled) the rest make no round
// trip, nor wait for a write of theirs still running, and wait for the
// store's return (retryLater: written, or deleted,
// as they are then), so that a stall holds the caller (the housekeeping
// tick, a node's registration or load report, an operator's order) one
// timeout, not one per session.
func (m *Manager) persistAll(ss []*session) (failed int) {
	return m.persistAllBy(ss, time.Time{})
}

// persistAllBy is persistAll with every store call of the batch bounded
// by deadline (an operator's call: its adminStoreWait), each by
// persistWait when deadline is zero. A session whose write the deadline
// ended waits for the store's return, as in a stall.
func (m *Manager) persistAllBy(ss []*session, deadline time.Time) (failed int) {
	waiting := 0
	for _, s := range ss {
		dl := deadline
		if dl.IsZero() {
			dl = time.Now().Add(m.persistWait)
		}
		mode := persistInBatch
		if !deadline.IsZero() {
			mode = persistOperator
		}
		switch err := m.persistBy(s, dl, mode); {
		case errors.Is(err, errStoreDown):
			waiting++
			failed++
		case err != nil:
			failed++
		}
	}
	if waiting > 0 {
		m.log.Warn("store: session writes wait for the store's return (it stalled)", "sessions", waiting)
	}
	if len(ss) > 0 {
		m.kickPump()
	}
	return failed
}

// persistAllFront is persistAll for a front-door request's store work
// (persistFront): in a stall the batch waits one StoreTimeout, since
// once the store timed out for one session the next ones' deletes wait
// for its return without a round trip each.
func (m *Manager) persistAllFront(ss []*session) {
	for _, s := range ss {
		m.persistFront(s)
	}
	if len(ss) > 0 {
		m.kickPump()
	}
}
