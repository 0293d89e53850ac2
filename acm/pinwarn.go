package acm

import (
	"fmt"
	"strings"
)

// pinWarningLocked says why titles pinned to node, title the one just
// pinned, may not all be fetched there (mu held): title's bitrate is
// more than the node's egress_bps (canStream: the storage planner never
// fetches it there, and no viewer could play it there), the node has no
// origin (lsm.NodeSpec.NoOrigin: it keeps the pinned titles it holds, and
// is never given the others), it has not registered since this manager
// started (a node the store knows: the pin holds once it registers), it
// is out of service (each reason: dead or
// unreachable, draining, weight 0), or they need more than its disk with
// its copies of titles pinned to the cluster (never evicted either). ""
// when none of these.
func (m *Manager) pinWarningLocked(node, title string) string {
	n := m.sched.Node(node)
	if n == nil {
		return fmt.Sprintf("; %s has not registered since this manager started (the store knows it): the title is fetched there once it registers", node)
	}
	t, known := m.titles()[title]
	switch {
	case known && !canStream(n, t):
		return fmt.Sprintf("; its bitrate, %.1f Mbit/s, is more than %s can stream (egress_bps %.1f Mbit/s): never fetched there, and a copy there is kept but plays to no viewer (give the node more egress_bps, or pin the title to another node)",
			float64(t.BitrateBps)/1e6, node, float64(n.Capacity.EgressBps)/1e6)
	case known && !canHold(n, t):
		return fmt.Sprintf("; it takes %d bytes, more than %s's disk (%d bytes): never fetched there, and its copies elsewhere are kept as if not pinned (pin it to a node with a larger disk)",
			t.SizeBytes, node, n.Capacity.DiskBytes)
	case n.NoOrigin:
		return fmt.Sprintf("; %s has no origin configured (node origin): a title pinned there is kept if the node holds it, never fetched there", node)
	case !n.Alive || n.Unreachable || n.Draining || n.Weight <= 0:
		// Every reason, as a prefetch refused there names them.
		return fmt.Sprintf("; %s %s: fetched there when it is back in service", node, outOfService(n))
	}
	var need int64
	cat := m.titles()
	for _, p := range m.pins.List() {
		if _, held := n.Holds(p.Title); p.Node == node || p.Node == "" && held && !m.pins.Pinned(node, p.Title) {
			// pinned there, or a copy there of a title pinned to the
			// cluster: never evicted either
			need += cat[p.Title].SizeBytes
		}
	}
	if disk := n.Capacity.DiskBytes; disk > 0 && need > disk {
		return fmt.Sprintf("; the titles pinned to %s and its copies of titles pinned to the cluster take %d bytes, more than its disk (%d bytes): not all will be there", node, need, disk)
	}
	return ""
}

// neverFetchedLocked reports whether the storage planner never fetches
// title to node (mu held): the node cannot stream it (its egress_bps is
// less than the title's bitrate), its disk is smaller than the title, or
// it has no origin. False for a title not in the catalog.
func (m *Manager) neverFetchedLocked(node, title string) bool {
	n := m.sched.Node(node)
	t, known := m.titles()[title]
	return n != nil && known && (!canStream(n, t) || !canHold(n, t) || n.NoOrigin)
}

// clusterPinWarningLocked says why title, just pinned to the cluster, is
// not fetched (mu held): its bitrate is more than every registered node's
// egress_bps (canStream), so the storage planner places it nowhere. ""
// when a node can stream it, or none is registered.
func (m *Manager) clusterPinWarningLocked(title string) string {
	t, known := m.titles()[title]
	if !known || len(m.sched.Nodes) == 0 {
		return ""
	}
	var most int64
	for _, n := range m.sched.Nodes {
		if canStream(n, t) {
			return ""
		}
		most = max(most, n.Capacity.EgressBps)
	}
	return fmt.Sprintf("; its bitrate, %.1f Mbit/s, is more than any registered node can stream (the largest egress_bps is %.1f Mbit/s): fetched once a node that can stream it registers",
		float64(t.BitrateBps)/1e6, float64(most)/1e6)
}

// pinFetchesLocked says what a pin of title just taken sets going (mu
// held): fetching, when the storage planner fetches it from the origin
// for the pin (to node, or with node "" to the cluster: no registered
// node holds it, nor fills it, and one in service with an origin can
// fetch it), and overridden, when an operator's eviction
// of it from node (Replicator.Held) kept it off the node, a hold the pin
// overrides (the plan places a title on the nodes pinning it). warn is
// the pin's warning (pinWarningLocked, clusterPinWarningLocked): with
// one, the title is not fetched now. Both false without the storage
// planner.
func (m *Manager) pinFetchesLocked(node, title, warn string) (fetching, overridden bool) {
	if m.rep == nil {
		return false, false
	}
	if node != "" {
		overridden = m.rep.Held(node, title, m.now())
		n := m.sched.Node(node)
		if n == nil || warn != "" {
			return false, overridden
		}
		_, there := n.Holds(title)
		return !there, overridden
	}
	if warn != "" {
		return false, false
	}
	can := false // a node in service with an origin: one the planner can fetch it to
	for _, n := range m.sched.Nodes {
		if _, there := n.Holds(title); there {
			return false, false
		}
		can = can || (m.sched.InService(n) && !n.NoOrigin)
	}
	return can, false
}

// pinDoneNote is what the answer to a pin says it set going (after
// "pinned"): the fetch of the title from the origin, the eviction holds
// of it the pin lifted (on lifted: liftHoldsForPin), and the one on node
// it overrides while it stands, not lifted (overridden; "" for the
// cluster).
func pinDoneNote(node string, fetching, overridden bool, lifted []string) string {
	hold := ""
	switch {
	case node != "" && len(lifted) > 0:
		hold = "; the eviction hold there is lifted"
	case len(lifted) > 0:
		hold = "; its eviction holds on " + strings.Join(lifted, ", ") + " are lifted"
	case overridden:
		hold = "; the eviction hold there gives way to the pin while it stands"
	}
	switch {
	case hold != "" && fetching && node == "":
		return hold + ": fetching it from the origin (vodctl fills shows the fill)"
	case hold != "" && fetching:
		return hold + ": fetching it there from the origin (vodctl fills shows the fill)"
	case hold != "":
		return hold
	case fetching && node == "":
		return "; no node holds it: fetching it from the origin (vodctl fills shows the fill)"
	case fetching:
		return "; fetching it there from the origin (vodctl fills shows the fill)"
	}
	return ""
}
