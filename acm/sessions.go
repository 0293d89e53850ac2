package acm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"vodcluster/acm/store"
	"vodcluster/lsm"
)

// session is one entry of the session table. Its fields are guarded by
// Manager.mu; persistMu serialises its writes to the store so that the
// last write always carries the latest state.
type session struct {
	store.Session
	res      lsm.Reservation
	reserved bool // res is booked in the scheduler
	restored bool // loaded from the store; reservation rebuilt when its node registers
	ended    bool // removed from the table; the store entry goes too

	persistMu sync.Mutex
}

// newSessionID returns 128 random bits in hex.
func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("acm: crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// restore loads the catalog and the session table from the store at
// Start. Sessions get their reservations back when their node registers.
func (m *Manager) restore() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	titles, err := m.st.Titles(ctx)
	if err != nil {
		return fmt.Errorf("acm: load catalog: %w", err)
	}
	m.setCatalog(titles)
	ss, err := m.st.Sessions(ctx)
	if err != nil {
		return fmt.Errorf("acm: load sessions: %w", err)
	}
	for _, s := range ss {
		if s.State == store.StateEnded {
			continue
		}
		m.sessions[s.ID] = &session{Session: s, restored: true}
		m.userSessions[s.User]++
	}
	if len(ss) > 0 {
		m.log.Info("session table restored", "sessions", len(m.sessions), "titles", len(titles))
	}
	return nil
}

// addSessionLocked books s in the table and in its node's index.
func (m *Manager) addSessionLocked(s *session) {
	m.sessions[s.ID] = s
	m.userSessions[s.User]++
	if ns := m.nodes[s.Node]; ns != nil {
		ns.addSession(s)
	}
}

// endLocked ends s: releases its reservation (exactly once), removes it
// from the table and the node index. The caller persists s afterwards
// (persist deletes ended sessions from the store) and kicks the pump.
func (m *Manager) endLocked(s *session, reason string) {
	if s.ended {
		return
	}
	if s.reserved {
		m.sched.Release(s.res)
		s.reserved = false
	}
	s.ended = true
	s.State = store.StateEnded
	delete(m.sessions, s.ID)
	if n := m.userSessions[s.User] - 1; n > 0 {
		m.userSessions[s.User] = n
	} else {
		delete(m.userSessions, s.User)
	}
	if ns := m.nodes[s.Node]; ns != nil {
		ns.removeSession(s)
	}
	m.log.Info("session ended", "session", s.ID, "node", s.Node, "title", s.Title, "user", s.User, "reason", reason)
}

// persist writes s's current state to the store (or deletes it when it
// ended). Concurrent persists of one session are serialised and each
// writes the state of its own moment, so the store ends with the latest.
func (m *Manager) persist(s *session) error {
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	m.mu.Lock()
	snap, gone := s.Session, s.ended
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if gone {
		err = m.st.DeleteSession(ctx, snap.ID)
	} else {
		err = m.st.PutSession(ctx, snap)
	}
	if err != nil {
		m.log.Error("store: session not persisted", "session", snap.ID, "err", err)
	}
	return err
}

// persistAll persists each session (after a batch of changes under mu).
func (m *Manager) persistAll(ss []*session) {
	for _, s := range ss {
		m.persist(s)
	}
	if len(ss) > 0 {
		m.kickPump()
	}
}

// tickLoop runs the periodic housekeeping: lsm.Tick (nodes that missed
// their heartbeats die and their sessions end), no-show release, and the
// end of restored sessions whose node never came back.
func (m *Manager) tickLoop() {
	iv := m.sched.Config.HeartbeatInterval / 2
	t := time.NewTicker(max(iv, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.tick(m.now())
		}
	}
}

func (m *Manager) tick(now time.Time) {
	var changed []*session
	m.mu.Lock()
	for _, n := range m.sched.Tick(now) {
		m.log.Warn("node dead: missed heartbeats", "node", n.ID, "last_heartbeat", n.LastHeartbeat)
		if ns := m.nodes[n.ID]; ns != nil {
			for _, s := range ns.sessionList() {
				m.endLocked(s, "node dead")
				changed = append(changed, s)
			}
		}
	}
	noShow := m.TokenTTL + m.NoShowGrace
	for _, s := range m.sessions {
		switch {
		case s.State == store.StateAdmitted && now.Sub(s.AdmittedAt) > noShow:
			m.endLocked(s, "no-show")
			changed = append(changed, s)
		case s.restored && !s.reserved && now.Sub(m.startedAt) > m.RestoreGrace:
			m.endLocked(s, "node did not return after restart")
			changed = append(changed, s)
		}
	}
	m.mu.Unlock()
	m.persistAll(changed)
}
