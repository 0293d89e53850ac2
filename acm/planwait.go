package acm

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// planWait is what the first plan after a start or a takeover waits for:
// the nodes the restored plan placed titles on, until each has registered
// (with its titles), or until the deadline. After a whole-cluster restart
// the nodes register one by one; a plan that sees only the first of them
// counts the copies the others hold as missing and fetches them again from
// the origin onto the nodes it sees, evicting what those hold to make
// room, and the restored replica counts fall to the nodes registered.
type planWait struct {
	nodes  []string  // the restored plan's nodes; nil: no wait
	until  time.Time // plan without the missing ones from then on
	logged bool      // the wait was logged
	waited int       // plans that waited
}

// armPlanWait starts the first plan's wait for the nodes of the plan the
// Replicator holds (restored at Start or at a takeover), for at most
// FirstPlanWait from now: a node that does not come back within it (one
// retired while the manager was down) holds no plan longer than that and
// the next PlanInterval tick.
func (m *Manager) armPlanWait(now time.Time) {
	m.planMu.Lock()
	m.armPlanWaitLocked(now)
	m.planMu.Unlock()
}

// armPlanWaitLocked is armPlanWait with planMu held (mu not).
func (m *Manager) armPlanWaitLocked(now time.Time) {
	if m.rep == nil {
		return
	}
	m.mu.Lock()
	nodes := m.rep.PlanNodes()
	m.mu.Unlock()
	m.firstPlan = planWait{nodes: nodes, until: now.Add(m.FirstPlanWait)}
	m.showPlanWait()
}

// planWaits reports whether the plan at now waits (planMu held, mu not):
// some node of the restored plan has not registered yet and the wait's
// deadline has not passed. The wait ends for good once every node
// registered or the deadline passed; the plan that a node's registration
// kicks (kickPlanSoon) is the one that finds them all.
func (m *Manager) planWaits(now time.Time) bool {
	w := &m.firstPlan
	if len(w.nodes) == 0 {
		return false
	}
	m.mu.Lock()
	missing := m.unregisteredLocked(w.nodes)
	m.mu.Unlock()
	switch {
	case len(missing) == 0:
		m.log.Info("the restored plan's nodes registered: planning", "nodes", len(w.nodes))
	case !now.Before(w.until):
		m.log.Warn("planning without nodes of the restored plan that did not register: the copies they held count as missing",
			"missing", len(missing), "nodes", shortList(missing, 10))
	default:
		w.waited++
		if !w.logged {
			w.logged = true
			m.log.Info("the first plan waits: nodes of the restored plan not registered yet",
				"missing", len(missing), "nodes", shortList(missing, 10), "until", w.until.Format(time.RFC3339))
		}
		return true
	}
	*w = planWait{}
	m.showPlanWait()
	return false
}

// unregisteredLocked returns the nodes of ids not registered with their
// titles, or not alive (mu held): a manager taking over knows the nodes
// that registered with it before, dead since the whole cluster went down,
// and a node that registers and dies during the wait is waited for again.
func (m *Manager) unregisteredLocked(ids []string) []string {
	var out []string
	for _, id := range ids {
		if ns, n := m.nodes[id], m.sched.Node(id); ns == nil || !ns.reported || n == nil || !n.Alive {
			out = append(out, id)
		}
	}
	return out
}

// showPlanWait publishes the first plan's wait for ListFills (planMu
// held), which reads it holding mu, not planMu (a plan holds planMu while
// it computes).
func (m *Manager) showPlanWait() {
	w := m.firstPlan
	w.nodes = slices.Clone(w.nodes)
	m.shownWait.Store(&w)
}

// planWaitLocked returns the nodes the first plan waits for, not
// registered yet, and until when (Unix ms) (mu held); none and 0 when it
// does not wait (nor on a standby, which plans nothing).
func (m *Manager) planWaitLocked() ([]string, int64) {
	w := m.shownWait.Load()
	if w == nil || len(w.nodes) == 0 || !m.now().Before(w.until) || m.standby() {
		return nil, 0
	}
	missing := m.unregisteredLocked(w.nodes)
	if len(missing) == 0 {
		return nil, 0
	}
	return missing, w.until.UnixMilli()
}

// planWaitNote returns what the answer to an order the plan carries out
// (a pin, a queued prefetch) adds while the first plan waits: which
// nodes, until when; "" when it does not wait (mu not held).
func (m *Manager) planWaitNote() string {
	m.mu.Lock()
	nodes, until := m.planWaitLocked()
	m.mu.Unlock()
	if len(nodes) == 0 {
		return ""
	}
	return fmt.Sprintf("; the planner waits for nodes of its restored plan to register (%s) until %s at most before it orders anything (vodctl fills)",
		shortList(nodes, 10), time.UnixMilli(until).UTC().Format("15:04:05 MST"))
}

// waitedFor reports whether the first plan's wait, as shown, names node
// (any lock or none).
func (m *Manager) waitedFor(node string) bool {
	w := m.shownWait.Load()
	return w != nil && slices.Contains(w.nodes, node)
}

// unwaitNode takes node out of the first plan's wait: the operator forgot
// it (a node retired while the manager was down is not waited for).
func (m *Manager) unwaitNode(node string) {
	m.planMu.Lock()
	defer m.planMu.Unlock()
	w := &m.firstPlan
	if n := len(w.nodes); n > 0 {
		if w.nodes = slices.DeleteFunc(w.nodes, func(id string) bool { return id == node }); len(w.nodes) < n {
			m.log.Info("the first plan no longer waits for the node: forgotten", "node", node, "still_waiting_for", len(w.nodes))
		}
	}
	m.showPlanWait()
}

// shortList returns ids joined by ", ", the first n of them and how many
// more when there are more.
func shortList(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
}
