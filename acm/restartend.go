package acm

import (
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// restartEnd sets when s ended, a session its node's first report r
// since the node registered or came back does not list (received at now,
// on the manager's clock), unless its ENDED said: when the node was last
// heard of before it died (heardUntil; or when the manager before this
// one's takeover last heard of the session, storedHeard, when later: the
// node went back to that one meanwhile), or else the earlier of when the
// node's process started after the session did and before r was taken
// (processStart, zero when the node did not say; a start after its own
// report is not believed) and when the manager before this one's start
// or takeover last heard of it after its start (storedHeard; at its start
// says nothing the process start does not). The record ends there, not
// at the registration, which may be an outage later. Left zero (ended
// now) otherwise.
func restartEnd(s *session, processStart time.Time, r *pb.LoadReport, now time.Time) {
	reportAt := reportTime(r, now)
	switch ps := processStart; {
	case !s.endedAt.IsZero():
	case !s.heardUntil.IsZero():
		// Its node died and came back without it (restarted): it ended by
		// the time the node, or the manager before this one's takeover,
		// last heard of it, not when it registered again.
		s.endedAt = idleEnd(s, later(later(s.heardUntil, s.storedHeard), s.StartedAt))
	case ps.After(s.StartedAt) && ps.Before(reportAt) && (!s.storedHeard.After(s.StartedAt) || ps.Before(s.storedHeard)):
		// This manager did not see the node die (it restarted meanwhile,
		// or the node came back before it missed its heartbeats): its
		// node's process started after it, so it ended by then at the
		// latest. Both times, and reportAt, are on the node's clock: a
		// clock off the manager's does not matter.
		s.endedAt = ps
	case !s.storedHeard.IsZero():
		// Known from the stored progress of the manager before this
		// one: it ended by the time that one last heard of it, as far as
		// can be told, also when the node's process started again later
		// (a power cut that took the manager and the node down together:
		// the node's restart is the outage later).
		s.endedAt = later(s.storedHeard, s.StartedAt)
	}
}

// endOrphanLocked ends orphan s, whose node did not come back within
// RestoreGrace (tick), on the active manager. Its record ends when the
// session or its node was last heard of, here (the node's last
// heartbeat, or heardUntil; not a registration the node sent no report
// after, which says nothing of the session) or by the manager before
// this one's start or takeover (storedHeard), whichever is later, not a
// restore_grace later: a node this manager heard of long ago (it
// registered here before the takeover) says less than the stored
// progress.
func (m *Manager) endOrphanLocked(s *session, now time.Time) {
	heard := later(s.storedHeard, s.heardUntil)
	if n := m.sched.Node(s.Node); n != nil && n.LastHeartbeat.Before(now) {
		// Not a registration the node sent no report after: it says
		// nothing of the session (nodeHeard).
		heard = later(heard, nodeHeard(m.nodes[s.Node], n))
	}
	heard = later(heard, m.startedHereLocked(s)) // its STARTED, when nothing since (its node died before its first report)
	if !heard.IsZero() {
		s.endedAt = idleEnd(s, later(heard, s.StartedAt))
	}
	m.endLocked(s, "node did not come back")
	if ns := m.nodes[s.Node]; ns != nil {
		ns.endedAway[s.ID] = true // to end at the node if it still plays it (endUnknownLocked)
	} else {
		// Restored, its node not registered since: told when it
		// registers, if it plays it still (as after a forget).
		m.forgotEnded[s.Node] = append(m.forgotEnded[s.Node], s.ID)
	}
	s.forget = m.lead != nil
}

// idleEnd returns when s, ending for its node's death, ended: at, or its
// viewer's last sign of life when its node's last report listed it idle
// since then (idleSince: an HTTP session between requests, an RTSP one
// paused and silent, as its idle timeout or a clean stop of the node
// would end it), never before its start.
func idleEnd(s *session, at time.Time) time.Time {
	if s.idleSince.IsZero() || !s.idleSince.Before(at) {
		return at
	}
	return later(s.idleSince, s.StartedAt)
}

// maxUnixMs is the last millisecond of the year 9999 (UTC), the latest
// time a session's store entry and record (JSON, RFC 3339) can hold: one
// after it failed the session's store write (the manager then reported
// its store unavailable) and lost its record.
const maxUnixMs = 253402300799999

// reportTime is when load report r was taken, on its node's clock
// (at_unix_ms); now, on the manager's, when it does not say or says a
// time past maxUnixMs.
func reportTime(r *pb.LoadReport, now time.Time) time.Time {
	if ms := r.GetAtUnixMs(); ms > 0 && ms <= maxUnixMs {
		return time.UnixMilli(ms)
	}
	return now
}

// sameProcess reports whether the node's process that registered, started
// at processStart (its clock; zero when the node did not say), is the one
// that started session s: one that never restarted since still holds the
// ENDED of s, queued while it could reach no manager.
func sameProcess(processStart time.Time, s *session) bool {
	return !processStart.IsZero() && !s.StartedAt.IsZero() && !processStart.After(s.StartedAt)
}
