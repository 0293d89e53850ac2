package acm

import (
	pb "vodcluster/proto/vodcluster/v1"
)

// staleLocked finds the complete copies of ns's report (cur) that are
// stale: the title's file was replaced at the origin, so the copy's
// version (or, for a copy whose version the node does not know, its size)
// is not the catalog's. A stale copy no session plays is evicted at once
// unless the origin is down (then it is the best the cluster has: lsm
// lets viewers play it while no fill can start) (removed from cur; a pin
// does not keep it, as the pin is the title's,
// not the old version's: the planner fills a pinned title again first);
// one that is playing stays and takes no new viewer (lsm.Holding.Stale),
// and is evicted at the first report where its sessions have ended. Each
// stale copy is logged once. It returns the stale copies left in cur
// (mu held).
func (m *Manager) staleLocked(ns *nodeState, cur map[string]*pb.StoredTitle) map[string]bool {
	cat := m.titles()
	var left map[string]bool
	for id, t := range cur {
		c, ok := cat[id]
		if !ok || t.GetFilling() || !staleCopy(t, c.SizeBytes, c.Version) {
			delete(ns.stale, id)
			continue
		}
		if !ns.stale[id] {
			ns.stale[id] = true
			m.log.Warn("stale copy: the title was replaced at the origin; the node's copy is evicted once no session plays it, and the title filled again",
				"node", ns.id, "title", id, "copy_bytes", t.GetSizeBytes(), "copy_version", t.GetVersion(),
				"catalog_bytes", c.SizeBytes, "catalog_version", c.Version, "sessions", t.GetSessions())
		}
		if t.GetSessions() == 0 && ns.active[id] == 0 && !m.originDown.Load() && m.orderEvictLocked(ns, id, false) {
			m.log.Info("stale copy evicted", "node", ns.id, "title", id)
			delete(ns.stale, id)
			delete(cur, id)
			continue
		}
		if left == nil {
			left = map[string]bool{}
		}
		left[id] = true
	}
	for id := range ns.stale {
		if cur[id] == nil {
			delete(ns.stale, id)
		}
	}
	return left
}

// staleCopy reports whether copy t is not the catalog's version of its
// title (size bytes, version): versions are compared when both are known,
// sizes otherwise.
func staleCopy(t *pb.StoredTitle, size int64, version string) bool {
	if v := t.GetVersion(); v != "" && version != "" {
		return v != version
	}
	return size > 0 && t.GetSizeBytes() != size
}
