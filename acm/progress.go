package acm

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"vodcluster/acm/store"
	"vodcluster/lsm"
)

// stateProgress names the stored progress of the sessions playing at
// their nodes (savedProgress as JSON).
const stateProgress = "session-progress"

// savedProgress is what the active manager last knew of the sessions that
// started at their nodes: when each was last heard of and the bytes its
// node last reported. It is written every ProgressSave and at Close, and
// read at Start and at a takeover, so that a session whose node does not
// come back within RestoreGrace (a whole cluster's power cut, a node that
// never returns) is recorded as ended when it was last heard of, with the
// bytes last reported, not when the new manager gave up on it with none:
// a session record's played_s then leaves out the manager's downtime.
type savedProgress struct {
	At       time.Time                  `json:"at"`
	Sessions map[string]sessionProgress `json:"sessions"`
}

// sessionProgress is one session's entry of savedProgress.
type sessionProgress struct {
	// HeardAt is when the session's node last reported while it played
	// it (the manager's clock).
	HeardAt time.Time `json:"heard_at"`
	// BytesSent is what its node had sent as of its last load report
	// with a figure for it, bytes; absent: none said (a figure of 0 is
	// one).
	BytesSent *int64 `json:"bytes_sent,omitempty"`
}

// progressLoop writes the sessions' progress (saveProgress) every
// ProgressSave, on the active manager only (a standby's would overwrite
// the active one's).
func (m *Manager) progressLoop() {
	t := time.NewTicker(m.ProgressSave)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			if m.Leader() {
				m.saveProgress(time.Now().Add(stateWriteWait))
			}
		}
	}
}

// heardLocked is when s was last heard of playing at its node: its
// node's last report while s holds its reservation, else the later of
// when the node was last heard of before it died (heardUntil) and what
// the stored progress said (storedHeard: the node went back to the
// manager before this one's takeover meanwhile), or its start when this
// manager heard of it (startedHereLocked: a node that died before its
// first report); zero when s never started or nothing is known.
func (m *Manager) heardLocked(s *session) time.Time {
	if s.StartedAt.IsZero() {
		return time.Time{}
	}
	var node time.Time
	if s.reserved {
		if n := m.sched.Node(s.Node); n != nil && !n.LastHeartbeat.IsZero() {
			ns := m.nodes[s.Node]
			if ns == nil || !ns.awaitFirst {
				return n.LastHeartbeat
			}
			node = nodeHeard(ns, n) // not the registration it sent no report after
		}
	}
	return later(later(node, s.heardUntil), later(s.storedHeard, m.startedHereLocked(s)))
}

// startedHereLocked is s's start when it came after this manager became
// active (its Start or takeover: startedAt), so its STARTED, or a report
// listing it, reached this manager: a time it was heard of playing. Zero
// otherwise: a session restored from the store started before, and its
// start says nothing of how long it played (mu held).
func (m *Manager) startedHereLocked(s *session) time.Time {
	if s.StartedAt.After(m.startedAt) {
		return s.StartedAt
	}
	return time.Time{}
}

// nodeHeard is when node n (ns its state; nil: none) was last heard of
// playing its sessions: its last report, not a registration it sent no
// report after (awaitFirst), which says nothing of them: then its last
// report before that registration if it was alive then (heardBefore),
// else zero.
func nodeHeard(ns *nodeState, n *lsm.Node) time.Time {
	if ns != nil && ns.awaitFirst {
		return ns.heardBefore
	}
	return n.LastHeartbeat
}

// saveProgress writes the progress of every session that started at its
// node to the store, by deadline. Nothing is written while no session
// started and none did at the last write. A failed write is logged; the
// next one tries again. On a shared store the write is bounded by the
// planner lock's lease (putLeaderState).
func (m *Manager) saveProgress(deadline time.Time) {
	m.mu.Lock()
	at, heard := m.now(), m.heardListLocked()
	skip := len(heard) == 0 && m.progressEmpty
	m.mu.Unlock()
	if skip {
		return
	}
	b, err := json.Marshal(progressOf(at, heard))
	if err == nil {
		err = m.putLeaderState(stateProgress, b, deadline)
	}
	if err != nil {
		m.log.Warn("sessions' progress not saved", "err", err)
		return
	}
	m.mu.Lock()
	m.progressEmpty = len(heard) == 0
	m.mu.Unlock()
}

// heardSession is one session's progress as heardListLocked takes it.
type heardSession struct {
	id    string
	heard time.Time
	bytes int64
	known bool // bytes is its node's figure (bytesAsOfReport)
}

// heardListLocked lists the progress of every session that started at
// its node (mu held): what little saveProgress needs under mu (some
// 1.5 ms with 10,000 sessions, BenchmarkProgressSnapshot; building the
// stored form there took twice that); progressOf makes that form
// without mu.
func (m *Manager) heardListLocked() []heardSession {
	out := make([]heardSession, 0, len(m.sessions))
	for id, s := range m.sessions {
		if heard := m.heardLocked(s); !heard.IsZero() {
			out = append(out, heardSession{id: id, heard: heard, bytes: s.bytesSent, known: s.bytesAsOfReport})
		}
	}
	return out
}

// progressOf is the stored progress of the sessions of heard, taken at.
func progressOf(at time.Time, heard []heardSession) savedProgress {
	p := savedProgress{At: at, Sessions: make(map[string]sessionProgress, len(heard))}
	for _, h := range heard {
		sp := sessionProgress{HeardAt: h.heard.UTC()}
		if h.known {
			sp.BytesSent = &h.bytes
		}
		p.Sessions[h.id] = sp
	}
	return p
}

// loadProgress reads the stored progress; a missing, unreadable or
// malformed entry gives none (logged unless missing): the sessions' ends
// are then when the manager gives up on them, as before any was saved.
// The read is given StoreTimeout at most, not what is left of ctx: a
// store that stalled after it listed the sessions leaves the takeover,
// or the node's registration, the rest of its time for its own writes
// (their stall handling) and reads.
func (m *Manager) loadProgress(ctx context.Context) map[string]sessionProgress {
	ctx, cancel := context.WithTimeout(ctx, m.StoreTimeout)
	defer cancel()
	b, err := m.st.State(ctx, stateProgress)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	var p savedProgress
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil {
		m.log.Warn("stored sessions' progress not read: sessions whose node does not come back end when restore_grace does", "err", err)
		return nil
	}
	return p.Sessions
}

// applyProgressLocked gives restored session s what the stored progress
// knew of it: when it was last heard of (storedHeard; its start when
// that was before it: the node's last report came before its STARTED,
// or the node's clock is ahead of the manager's, as when the manager
// ends it on a node's death) and, when nothing newer counted its bytes,
// the bytes its node last reported, as of that report.
func applyProgressLocked(s *session, p sessionProgress) {
	if s.StartedAt.IsZero() || p.HeardAt.IsZero() {
		return
	}
	s.storedHeard = later(s.storedHeard, later(p.HeardAt, s.StartedAt))
	if b := p.BytesSent; b != nil && !s.bytesReported && (!s.bytesAsOfReport || *b > s.bytesSent) {
		s.bytesSent, s.bytesAsOfReport = *b, true
	}
}
