package acm

// copyElsewhereLocked reports whether a node in service other than id,
// one that can stream the title (canStream), holds it whole, of the
// catalog's version, as lsm sees it (mu held).
// A title pinned to the cluster must stay in it, not on every node that
// ever got a copy: the operator may evict such a copy while another
// serves (the planner copies a pinned title off a node that drains, and
// once the node is back both copies were held for good).
func (m *Manager) copyElsewhereLocked(id, title string) bool {
	t, known := m.titles()[title]
	for _, n := range m.sched.Nodes {
		if n.ID == id || !m.sched.InService(n) || known && !canStream(n, t) {
			continue
		}
		if filling, ok := n.Holds(title); ok && !filling && !n.HoldsStale(title) {
			return true
		}
	}
	return false
}
