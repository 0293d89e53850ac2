package acm

import (
	"fmt"
	"log/slog"
	"time"

	"vodcluster/lsm"
	"vodcluster/proto/durtext"
)

// errNoNodeReporting refuses at once a request while no node reports to
// the manager: none registered since it became active, or every one dead
// for over RestoreGrace or forgotten (lsm.Scheduler.AnyNodeReporting), so
// waiting out the queue deadline would only hold the viewer. Not in the
// manager's first RestoreGrace (nodesSettledLocked: nodes may still be
// registering), nor on a standby (nodes report to the active manager; a
// standby serving viewers got the front door's address before its nodes
// followed, and takes the planner lock as they register; it refuses with
// it only at the queue deadline: refusalCauseLocked). RTSP 503 and
// HTTP 503, both with Retry-After, as errNoNodeInService. It wraps
// errNoBandwidth (the outcome no_capacity).
var errNoNodeReporting = fmt.Errorf("%w: no node is reporting to the manager", errNoBandwidth)

// noNodeReportingLocked reports whether a request is refused at once
// with errNoNodeReporting (mu held): the manager is not a standby, the
// nodes settled (nodesSettledLocked) and none is alive or dead within
// RestoreGrace.
func (m *Manager) noNodeReportingLocked(now time.Time) bool {
	return !m.standby() && m.nodesSettledLocked(now) && !m.sched.AnyNodeReporting(m.deadBefore(now))
}

// refuseNoNodeLocked refuses r of user at once when
// noNodeReportingLocked holds: it logs why (at warn, collapsed as the
// other capacity refusals) and returns errNoNodeReporting with mu
// released; otherwise it returns nil with mu still held.
func (m *Manager) refuseNoNodeLocked(r *lsm.Request, user string, now time.Time) error {
	if !m.noNodeReportingLocked(now) {
		return nil
	}
	return m.noNodeRefusedLocked(r, user, now, now)
}

// noNodeRefusedLocked logs the refusal of r of user with
// errNoNodeReporting, asked at asked (its wait in the queue, when it
// waited, is logged), and returns errNoNodeReporting (mu held, and
// released).
func (m *Manager) noNodeRefusedLocked(r *lsm.Request, user string, asked, now time.Time) error {
	known := len(m.sched.Nodes)
	m.mu.Unlock()
	why := "no node is registered with the manager (none since it became active, or each one forgotten)"
	if known > 0 {
		why = fmt.Sprintf("no node is reporting to the manager: the %d it knows have been dead for over restore_grace (%s)", known, durtext.Written(m.RestoreGrace))
	}
	msg, attrs := "admission refused at once: ", []any{"title", r.Title, "user", user, "known_nodes", known}
	if waited := now.Sub(asked); waited > 0 {
		msg, attrs = "admission refused while it waited: ", append(attrs, "waited", waited)
	}
	m.capRefusals.log(m.log, now, refusedNoNodeReporting, slog.LevelWarn,
		msg+why+"; start the nodes, or check that they reach the manager's NodeControl address "+m.GRPCAddr()+" (node.manager) with the cluster secret (secret_file)",
		attrs...)
	return errNoNodeReporting
}

// refuseNoNodeQueuedLocked refuses with errNoNodeReporting every waiting
// request once noNodeReportingLocked holds (the last node was forgotten,
// or dead for over RestoreGrace, or the manager's first RestoreGrace
// ran out with none registered, while they waited) and wakes their
// waiters (mu held): waiting out the queue deadline brings them no node.
// The pump runs it, and tick at every round: no event marks a grace
// running out.
func (m *Manager) refuseNoNodeQueuedLocked(now time.Time) {
	if m.sched.Queued() == 0 || !m.noNodeReportingLocked(now) {
		return
	}
	m.refuseQueuedLocked(now, func(_ time.Time, err error) []*lsm.Ticket { return m.sched.RefuseAll(err) }, errNoNodeReporting)
}
