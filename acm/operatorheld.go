package acm

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"vodcluster/lsm"
)

// errNoNodeInService refuses at once a request no node could take unless
// an operator acts (lsm.Scheduler.NeedsOperator): every node that could
// serve it is drained or at weight 0 (vodctl node --drain, --weight 0),
// and nothing drained comes back by itself, so waiting out the queue
// deadline would only hold the viewer. Not in the manager's first
// RestoreGrace (nodesSettledLocked). RTSP 503 and HTTP 503, both with
// Retry-After. It wraps errNoBandwidth (the outcome no_capacity).
var errNoNodeInService = fmt.Errorf("%w: every node that could take it is drained or at weight 0", errNoBandwidth)

// deadBefore is the last heartbeat before which a dead node is not
// expected back by itself (mu held or not): RestoreGrace before now, the
// time the manager keeps a dead node's sessions for its return.
func (m *Manager) deadBefore(now time.Time) time.Time { return now.Add(-m.RestoreGrace) }

// nodesSettledLocked reports whether the manager has been active for
// RestoreGrace (mu held): before, nodes may still be registering after
// its start or takeover (it knows only those that have), so that a
// drained one alone proves nothing and nothing is refused at once.
func (m *Manager) nodesSettledLocked(now time.Time) bool {
	return now.Sub(m.startedAt) >= m.RestoreGrace
}

// needsOperatorLocked reports whether r is refused at once (mu held): no
// node could take it until an operator acts (lsm.Scheduler.NeedsOperator),
// the nodes settled (nodesSettledLocked).
func (m *Manager) needsOperatorLocked(r *lsm.Request, now time.Time) bool {
	return m.nodesSettledLocked(now) && m.sched.NeedsOperator(r, m.deadBefore(now))
}

// refuseNeedingOperatorLocked refuses the waiting requests no node could
// take unless an operator acts (an operator drained the last node while
// they waited) and wakes their waiters (mu held).
func (m *Manager) refuseNeedingOperatorLocked(now time.Time) {
	m.refuseQueuedLocked(now, m.sched.RefuseNeedingOperator, errNoNodeInService)
}

// noNodeInServiceRefusedLocked logs the refusal of r of user with
// errNoNodeInService, asked at asked (its wait in the queue, when it
// waited, is logged: now after asked), and returns errNoNodeInService (mu
// held, and released).
func (m *Manager) noNodeInServiceRefusedLocked(r *lsm.Request, user string, asked, now time.Time) error {
	why := m.operatorHeldLocked(r, now)
	m.mu.Unlock()
	msg, attrs := "admission refused at once: ", []any{"title", r.Title, "user", user}
	if waited := now.Sub(asked); waited > 0 {
		msg, attrs = "admission refused while it waited: ", append(attrs, "waited", waited)
	}
	m.capRefusals.log(m.log, now, refusedNoNodeInService, slog.LevelWarn, msg+why, attrs...)
	return errNoNodeInService
}

// hopelessLocked is the at-once refusal that holds for r at now, checked
// again when r reaches its queue deadline (mu held): errNoNodeReporting
// (noNodeReportingLocked), errOriginDown (originDownLocked: the origin
// went down while r waited, and no node in service holds its title),
// errNoNodeInService
// (needsOperatorLocked) or errNoSource (noSourceLocked), in that order;
// err otherwise. A grace running out is marked by no
// event, and the queue is checked for it only at the next round of tick or
// pump: a deadline falling in between was refused 453 "no bandwidth",
// sending the operator to the nodes' egress.
func (m *Manager) hopelessLocked(r *lsm.Request, now time.Time, err error) error {
	switch {
	case m.noNodeReportingLocked(now):
		return errNoNodeReporting
	case m.originDownLocked(r):
		return errOriginDown
	case m.needsOperatorLocked(r, now):
		return errNoNodeInService
	case m.noSourceLocked(r, now):
		return errNoSource
	}
	return err
}

// refuseHopelessQueuedLocked refuses the waiting requests no node will
// take while nothing changes and wakes their waiters (mu held): while no
// node reports to the manager (refuseNoNodeQueuedLocked), those no node
// could take unless an operator acts (refuseNeedingOperatorLocked) and
// those no node can get the title for (refuseNoSourceQueuedLocked). The
// pump runs it, and tick at every round: no event marks the manager's
// first RestoreGrace or a dead node's running out.
func (m *Manager) refuseHopelessQueuedLocked(now time.Time) {
	m.refuseNoNodeQueuedLocked(now)
	m.refuseNeedingOperatorLocked(now)
	m.refuseNoSourceQueuedLocked(now)
}

// refuseQueuedLocked refuses with err, by refuse (one of lsm's
// Scheduler.Refuse* over the queue), the waiting requests no node will
// take while nothing changes, once the nodes have settled, and wakes
// their waiters (mu held).
func (m *Manager) refuseQueuedLocked(now time.Time, refuse func(deadBefore time.Time, err error) []*lsm.Ticket, err error) {
	if m.sched.Queued() == 0 || !m.nodesSettledLocked(now) {
		return
	}
	for _, tk := range refuse(m.deadBefore(now), err) {
		if ch, ok := m.waiters[tk]; ok {
			delete(m.waiters, tk)
			close(ch)
		}
	}
}

// operatorHeldLocked says which nodes hold r back until an operator acts
// (mu held), for the operator's log: at most 8, each with its state.
func (m *Manager) operatorHeldLocked(r *lsm.Request, now time.Time) string {
	const most = 8
	var held []string
	k := 0
	for _, n := range m.sched.Nodes {
		if !lsm.Counts(n, r, m.deadBefore(now)) {
			continue
		}
		var why []string
		if n.Draining {
			why = append(why, "drained")
		}
		if n.Weight <= 0 {
			why = append(why, "weight 0")
		}
		if !n.Alive {
			why = append(why, "dead")
		}
		if k++; k <= most {
			held = append(held, n.ID+" ("+strings.Join(why, ", ")+")")
		}
	}
	s := strings.Join(held, ", ")
	if k > most {
		s += fmt.Sprintf(" and %d more", k-most)
	}
	which := "every node"
	if r.SiteOnly && r.Site != "" {
		which = fmt.Sprintf("every node of the viewer's site %q (site_only)", r.Site)
	}
	return which + " that could take it is drained or at weight 0 (vodctl node NODE --undrain or --weight puts one back): " + s
}
