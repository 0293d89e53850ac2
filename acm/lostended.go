package acm

import (
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// lostEndedKeep is how long the manager remembers the session ids of the
// ENDED reports it logged as lost (logLostEndedLocked): longer than a
// node retries one.
const lostEndedKeep = 10 * time.Minute

// maxLostEnded bounds the ids remembered at once (the oldest go first):
// a node that lost its manager's store state may end thousands.
const maxLostEnded = 4096

// recentIDs remembers ids for a while, in the order they were added, at
// most a bound of them (the oldest forgotten first).
type recentIDs struct {
	at    map[string]time.Time
	order []string
}

// add remembers id with time at, forgetting, as of now, those whose time
// is older than keep and the oldest past most, and reports whether id was
// not remembered already (its time is left as it was then).
func (r *recentIDs) add(id string, at, now time.Time, keep time.Duration, most int) bool {
	for len(r.order) > 0 && (len(r.order) >= most || now.Sub(r.at[r.order[0]]) > keep) {
		delete(r.at, r.order[0])
		r.order = r.order[1:]
	}
	if _, ok := r.at[id]; ok {
		return false
	}
	if r.at == nil {
		r.at = map[string]time.Time{}
	}
	r.at[id] = at
	r.order = append(r.order, id)
	return true
}

// has reports whether id is remembered with a time no older, as of now,
// than keep.
func (r *recentIDs) has(id string, now time.Time, keep time.Duration) bool {
	at, ok := r.at[id]
	return ok && now.Sub(at) <= keep
}

// logLostEndedLocked logs at info, once per session id, the ENDED report
// ev of a session the manager does not hold, which it answers NOT_FOUND
// (mu held): its node played a session the manager had lost (it restarted
// after its store lost its data: Redis without appendonly) or had ended
// already, and no session record is written for it here. The report
// carries the title, the reason, the bytes sent and the end time, but
// neither the subscriber nor the admission or start time, so the log line
// is all that is left of it. The ENDED of a session this manager ended
// itself within lostEndedKeep (endedHere: superseded, ended by the
// operator with no session record to complete, an orphan past
// restore_grace, a record held past its wait) is routine, its end
// logged (and recorded, with a records file) then: logged at debug only.
func (m *Manager) logLostEndedLocked(ev *pb.SessionEvent, at time.Time) {
	now := m.now()
	if ev.GetKind() != pb.SessionEvent_KIND_ENDED || !m.lostEnded.add(ev.GetSessionId(), now, now, lostEndedKeep, maxLostEnded) {
		return
	}
	if m.endedHere.has(ev.GetSessionId(), now, lostEndedKeep) {
		m.log.Debug("session ended at its node after this manager ended it",
			"node", ev.GetNodeId(), "session", ev.GetSessionId(), "title", ev.GetTitleId(), "reason", ev.GetReason(),
			"bytes_sent", ev.GetBytesSent(), "ended_at", at.UTC())
		return
	}
	m.log.Info("session ended at its node that this manager does not hold (lost in a restart after the store lost its data, or ended here already): no session record written",
		"node", ev.GetNodeId(), "session", ev.GetSessionId(), "title", ev.GetTitleId(), "reason", ev.GetReason(),
		"bytes_sent", ev.GetBytesSent(), "ended_at", at.UTC())
}
