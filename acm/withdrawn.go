package acm

import (
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// DefaultWithdrawnGrace is Manager.WithdrawnGrace's default.
const DefaultWithdrawnGrace = time.Hour

// withdrawnSeen is a node's copy of a title the catalog does not have
// (nodeState.withdrawn).
type withdrawnSeen struct {
	at     time.Time // when the manager first saw it so
	gen    uint64    // Manager.catalogGen then
	logged bool      // its first sight logged
}

// withdrawnLocked evicts the copies in ns's report (cur) of titles
// withdrawn at the origin: not in the catalog of a read from the origin
// made after the manager first saw the copy so, for WithdrawnGrace
// since. The title is refused at the front door from its withdrawal on,
// so the copy serves no one, while it holds disk the planner counts (and
// a title taken down should leave the nodes). The grace keeps the copies
// of a title published again soon, and of a catalog that lost titles for
// a while (a directory not mounted at the origin), from being filled
// again. A copy being played or filled, or a viewer is on its way for,
// waits for its sessions to end, and one a prefetch filled waits for the
// report that completes the prefetch (syncTitlesLocked would take the
// copy's eviction for the fill lost); none is evicted while the origin is
// down, by a manager without an origin (its catalog is the stored one),
// on a node without an origin (lsm.NodeSpec.NoOrigin: the copies it
// serves are its own), or with WithdrawnGrace < 0. Nor is any on a node
// most of whose copies the catalog lacks, or while it is empty: an
// origin whose title directory was not mounted, or lost its catalog
// file, serves a catalog without them, and evicting would empty the
// nodes' disks (logged once per node; the operator evicts by hand what
// was withdrawn indeed). A pin does not keep it (a pinned title cannot
// be filled again either). Evicted copies are removed from cur. The
// steady-report shortcut does not wait for it: each catalog read makes
// every node's next report a full one, so the grace is checked at least
// every catalog_refresh. mu held.
func (m *Manager) withdrawnLocked(ns *nodeState, cur map[string]*pb.StoredTitle, cat map[string]store.Title, now time.Time) {
	n := m.sched.Node(ns.id)
	if m.origin == nil || m.WithdrawnGrace < 0 || (n != nil && n.NoOrigin) {
		clear(ns.withdrawn)
		return
	}
	gen := m.catalogGen.Load()
	absent := 0
	for id := range cur {
		if _, ok := cat[id]; !ok {
			absent++
		}
	}
	if absent > 0 && (len(cat) == 0 || 2*absent > len(cur)) {
		if !ns.withdrawnMost {
			ns.withdrawnMost = true
			m.log.Error("most of the node's copies are of titles not in the origin's catalog: none evicted as withdrawn; check the origin's title directory (evict what was withdrawn indeed with vodctl evict)",
				"node", ns.id, "copies", len(cur), "not_in_catalog", absent, "catalog_titles", len(cat))
		}
		return
	}
	ns.withdrawnMost = false
	for id, t := range cur {
		if _, ok := cat[id]; ok {
			delete(ns.withdrawn, id)
			continue
		}
		w := ns.withdrawn[id]
		if w == nil {
			w = &withdrawnSeen{at: now, gen: gen}
			ns.withdrawn[id] = w
		}
		if gen <= w.gen {
			continue // not withdrawn until a catalog read after this says so
		}
		if !w.logged {
			w.logged = true
			m.log.Info("copy of a title withdrawn at the origin: evicted once no one plays it, withdrawn_grace after it was first seen",
				"node", ns.id, "title", id, "bytes", t.GetStoredBytes(), "withdrawn_grace", m.WithdrawnGrace, "sessions", t.GetSessions())
		}
		if now.Sub(w.at) < m.WithdrawnGrace || t.GetFilling() || ns.filling[id] || t.GetSessions() > 0 || ns.active[id] > 0 || m.originUnusable() != "" {
			continue
		}
		if m.orderEvictLocked(ns, id, true, evictWithdrawn) {
			m.log.Info("withdrawn title evicted", "node", ns.id, "title", id, "bytes", t.GetStoredBytes())
			delete(ns.withdrawn, id)
			delete(cur, id)
		}
	}
	for id := range ns.withdrawn {
		if cur[id] == nil {
			delete(ns.withdrawn, id)
		}
	}
}
