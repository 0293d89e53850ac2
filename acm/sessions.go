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
// Manager.mu; its persist lock (lockPersist) serialises its writes to the
// store so that the last write always carries the latest state.
type session struct {
	store.Session
	res      lsm.Reservation
	reserved bool // res is booked in the scheduler
	restored bool // loaded from the store, or its node died: reservation rebuilt when the node registers or reports
	// orphaned is when RestoreGrace starts for a session without a
	// reservation: its node died, or it was loaded at a takeover or a
	// node's registration (zero for one loaded at Start: the grace counts
	// from Manager.startedAt then).
	orphaned time.Time
	ended    bool // removed from the table; the store entry goes too
	// uncounted: not in Manager.userSessions while orphaned by its node's
	// death, so that a viewer whose node died can start again at once
	// within its subscriber's session cap; counted again with its
	// reservation (countLocked).
	uncounted bool
	// forget: an ended orphan whose store entry is deleted only if no
	// other manager took it over (on a shared store its node may have
	// registered with another manager, which holds the session now).
	forget bool
	// claimedOver is the store entry (its Digest), naming another
	// manager, that this manager claimed the session over (a takeover,
	// its node registering here: Manager rewritten), until a write of the
	// claim is made: a write made late (retryWrites) may still write over
	// that entry (putOwn), or delete it (deleteOwn), while its node
	// reports here, if that manager did not rewrite it since (its node,
	// back there, plays it on: the entry is that manager's again).
	claimedOver string
	// rewrite: a live session the store lacked at a takeover (a Redis
	// restarted without its data), written back there (loadSessions): a
	// write made late (retryWrites) writes it whole, not only over an
	// entry this manager holds (putOwn refuses a missing one). Cleared
	// once written.
	rewrite bool
	// playingAt is the node's report count (nodeState.reports) when the
	// session was seen playing; absent counts the node's reports in a
	// row that did not list it although it played before the previous
	// one (a lost ENDED: ended after two).
	playingAt uint64
	absent    int
	// bytesSent is what the node sent, from its ENDED event, or until
	// then from its last load report that had a figure for the session
	// (bytesAsOfReport; 0 before any): for the session record.
	// bytesReported: an ENDED brought it (the node said; else the record
	// marks it as of a report, or the 0 as unknown).
	bytesSent       int64
	bytesReported   bool
	bytesAsOfReport bool
	// pausedMs is how long it was paused, from its ENDED (0 before, and
	// from a node that does not say).
	pausedMs int64
	// holdRecord: its session record waits for its node's ENDED (the
	// operator ended it: admin_sessions.go).
	holdRecord bool
	// awaitEnded: its node's first report after registering did not list
	// it, and its ENDED was refused as UNAVAILABLE before (the node not
	// registered here: Manager.endedRefused), or the node's process is
	// the one that played it (sameProcess), which queued the ENDED while
	// it reached no manager: the node sends it after that report. The
	// record waits for it (endedRetryWait) and takes its bytes, end time
	// and reason.
	awaitEnded bool
	// endedAt is when it ended by its node's ENDED event (the viewer's
	// last sign of life for a timeout); zero: when the manager ended it.
	endedAt time.Time
	// heardUntil is when its node was last heard of before it died
	// (orphanLocked), kept when the node comes back; zero again once a
	// report of the node lists the session. A session the node's first
	// report after it came back does not list ended by then (its record).
	heardUntil time.Time
	// storedHeard is when it was last heard of by the manager before this
	// one's start or takeover (the stored progress: progress.go); zero
	// again once a report of its node lists it.
	storedHeard time.Time
	// idleSince is its viewer's last sign of life, for a session its
	// node's last report before it died listed idle (nodeState.idle: an
	// HTTP session asking nothing, an RTSP one paused and silent, for
	// longer than the node's session timeout), or quiet for quietLeft or
	// more (nodeState.quiet: an HTTP session asking nothing that long);
	// zero otherwise, and again
	// once a report of its node lists it. A session that ends for its
	// node's death ends there at the latest (idleEnd).
	idleSince time.Time
	// startedNodeMs is when the node started it, on the node's clock (its
	// STARTED event, or the first report that listed it); 0: unknown. A
	// report taken before then does not count as leaving it out.
	startedNodeMs int64
	// fillSeen: a report of its node showed the title (filling or held)
	// since the session was placed with a fill (res.Fill): the manager no
	// longer stands in for the fill's report (syncTitlesLocked), so a fill
	// that failed there leaves the node's view.
	fillSeen bool

	// persistSem is the persist lock (lockPersist): a value while a
	// write or delete of the session runs; made once (persistOnce).
	persistSem  chan struct{}
	persistOnce sync.Once
}

// lockPersist takes s's persist lock, waiting until ctx is done at most:
// a persist of the session waits for the one before it, which may wait
// for a stalled store (a front-door request's persist is bounded by
// StoreTimeout, not by another's 10 s). It reports whether it took it;
// unlockPersist releases it.
func (s *session) lockPersist(ctx context.Context) bool {
	if s.tryLockPersist() {
		return true
	}
	select {
	case s.persistSem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// tryLockPersist takes s's persist lock when it is free, without
// waiting, and reports whether it took it.
func (s *session) tryLockPersist() bool {
	s.persistOnce.Do(func() { s.persistSem = make(chan struct{}, 1) })
	select {
	case s.persistSem <- struct{}{}:
		return true
	default:
		return false
	}
}

// unlockPersist releases the lock lockPersist took.
func (s *session) unlockPersist() { <-s.persistSem }

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
// A session entry that does not decode is skipped (logSkipped); a title's
// fails Start (store.Titles).
func (m *Manager) restore() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	titles, err := m.st.Titles(ctx)
	if err != nil {
		return fmt.Errorf("acm: load catalog: %w", err)
	}
	m.setCatalog(titles)
	ss, skipped, err := m.st.Sessions(ctx)
	if err != nil {
		return fmt.Errorf("acm: load sessions: %w", err)
	}
	m.logSkipped(skipped)
	for _, s := range ss {
		if s.State == store.StateEnded {
			continue
		}
		m.sessions[s.ID] = &session{Session: s, restored: true}
		m.userSessions[s.User]++
	}
	for id, p := range m.loadProgress(ctx) {
		if s := m.sessions[id]; s != nil {
			applyProgressLocked(s, p)
		}
	}
	return nil
}

// logSkipped logs the stored session entries a listing of the store
// skipped (they do not decode: whose session they are cannot be told),
// each once in this process's life, with how an operator removes it. The
// store leaves them, and each listing skips them again: at a takeover, at
// each node's registration.
func (m *Manager) logSkipped(skipped []store.Skipped) {
	for _, sk := range skipped {
		if _, seen := m.health.skipped.LoadOrStore(sk.ID, true); seen {
			continue
		}
		attrs := []any{"session", sk.ID, "err", sk.Err}
		if sk.Remove != "" {
			attrs = append(attrs, "remove", sk.Remove)
		}
		m.log.Error("store: a stored session entry does not decode: skipped, the others loaded; it is left as is (remove it)", attrs...)
	}
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
	now := m.now()
	m.endedHere.add(s.ID, now, now, lostEndedKeep, maxLostEnded)
	delete(m.sessions, s.ID)
	m.uncountLocked(s)
	if ns := m.nodes[s.Node]; ns != nil {
		ns.removeSession(s)
	}
	if reason == reasonLeftToActive {
		// Not an end: the session plays on with the active manager.
		m.log.Info("session left to the active manager: out of this manager's table (no record here)", "session", s.ID, "node", s.Node, "title", s.Title, "user", s.User)
		return
	}
	m.log.Info("session ended", "session", s.ID, "node", s.Node, "title", s.Title, "user", s.User, "reason", reason)
	m.sessionRecordLocked(s, reason, now)
}

// reasonLeftToActive ends a session on a standby without ending it: the
// active manager holds it (no session record here).
const reasonLeftToActive = "node did not come back here: left to the active manager"

// tickLoop runs the periodic housekeeping: lsm.Tick (nodes that missed
// their heartbeats die and their sessions are orphaned), the refusal of
// the waiting requests no node will take while nothing changes
// (refuseHopelessQueuedLocked), no-show release, and the end of orphaned
// sessions whose node did not come back within RestoreGrace.
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
	m.capRefusals.flush(m.log, now) // a burst's count, once its window is over
	var changed []*session
	m.mu.Lock()
	dead := m.sched.Tick(now)
	for _, n := range dead {
		m.log.Warn("node dead: missed heartbeats", "node", n.ID, "last_heartbeat", n.LastHeartbeat)
		if ns := m.nodes[n.ID]; ns != nil {
			m.orphanLocked(ns, now, false)
		}
	}
	if len(dead) > 0 {
		// Its fills hold no origin channel any more: a request waiting
		// for one may go ahead.
		defer m.kickPump()
	}
	// The manager's first RestoreGrace, or a dead node's (its last
	// node's, or the last one in service or with an origin that a request
	// could use), may have run out while requests wait: no event but this
	// round marks it when no node reports to kick the pump.
	m.refuseHopelessQueuedLocked(now)
	m.flushHeldRecordsLocked(now, false)
	noShow := m.TokenTTL + m.NoShowGrace
	for _, s := range m.sessions {
		switch {
		case s.restored && !s.reserved:
			// An orphan: its node may have started it while out of
			// touch, so no no-show; it ends once the grace is over.
			if now.Sub(later(m.startedAt, s.orphaned)) > m.RestoreGrace {
				if m.lead != nil && m.lead.toOther.Load() {
					// Holding the lock while another manager serves the
					// nodes, to which it goes within moments: left to
					// end as below once it has.
					continue
				}
				if m.lead != nil && !m.Leader() {
					// A standby (or a manager that took the lock over
					// and gave it back, its nodes reporting to the other
					// one): the session is the active manager's to end.
					// It leaves the table here; the store entry, and the
					// node, are left alone.
					m.endLocked(s, reasonLeftToActive)
					continue
				}
				m.endOrphanLocked(s, now)
				changed = append(changed, s)
			}
		case s.State == store.StateAdmitted && now.Sub(s.noShowFrom()) > noShow:
			m.noShowLocked(s)
			if ns := m.nodes[s.Node]; ns != nil {
				ns.noShows++ // vodcluster_node_no_shows_total
			}
			s.forget = m.lead != nil
			changed = append(changed, s)
		}
	}
	m.mu.Unlock()
	m.persistAll(changed)
}

// orphanLocked handles the death of node ns (missed heartbeats): its
// sessions' reservations are released (the node gets no new sessions and
// its bit/s are free for none), but the sessions stay in the table and
// the store, since a node that only lost its link to the manager keeps
// playing them. When the node registers again (here, or with another
// manager on a shared store) they get their reservations back and its
// first report ends those it no longer plays; those still orphaned
// RestoreGrace later end (tick). left says the node said goodbye (it is
// stopping, and its sessions' ENDED reports follow): logged at info, not
// as a warning.
func (m *Manager) orphanLocked(ns *nodeState, now time.Time, left bool) {
	var heard time.Time
	if node := m.sched.Node(ns.id); node != nil {
		// Not the registration the node sent no report after, which says
		// nothing of the sessions: its last report before (heardBefore),
		// if any, else what was known of them (storedHeard, heardUntil).
		heard = nodeHeard(ns, node)
	}
	n := 0
	for _, s := range ns.sessionList() {
		if s.reserved {
			m.sched.Release(s.res)
			s.reserved = false
		}
		s.restored, s.orphaned = true, now
		if !heard.IsZero() {
			s.heardUntil = heard
		}
		s.idleSince = ns.idle[s.ID]
		if since, ok := ns.quiet[s.ID]; ok && now.Sub(since) >= quietLeft {
			s.idleSince = since // its viewer gone, or paused (a playing one asks every segment)
		}
		m.uncountLocked(s)
		n++
	}
	switch {
	case n > 0 && left:
		m.log.Info("node left with sessions: reservations released; their ends follow from the node (or restore_grace)", "node", ns.id, "sessions", n, "grace", m.RestoreGrace)
	case n > 0:
		m.log.Warn("sessions orphaned: reservations released until the node comes back", "node", ns.id, "sessions", n, "grace", m.RestoreGrace)
	}
}

// uncountLocked takes s out of its subscriber's live session count.
func (m *Manager) uncountLocked(s *session) {
	if s.uncounted {
		return
	}
	s.uncounted = true
	if n := m.userSessions[s.User] - 1; n > 0 {
		m.userSessions[s.User] = n
	} else {
		delete(m.userSessions, s.User)
	}
}

// countLocked counts s in its subscriber's live sessions again.
func (m *Manager) countLocked(s *session) {
	if s.uncounted {
		s.uncounted = false
		m.userSessions[s.User]++
	}
}

// noShowFrom is when the no-show clock of s, whose viewer has not reached
// its node, started: the signing of the newest token its viewer was given
// (AdmittedAt, or TokenAt once the viewer asked again: stored with the
// session, so that a manager that loads it counts from there too).
func (s *session) noShowFrom() time.Time { return later(s.AdmittedAt, s.TokenAt) }

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
