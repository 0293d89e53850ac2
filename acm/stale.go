package acm

import (
	"slices"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// staleCopySeen is a complete copy on a node of another version (or
// size) than the catalog's (nodeState.stale).
type staleCopySeen struct {
	gen    uint64 // Manager.catalogGen when the manager first saw it
	warned bool   // logged as stale
}

// staleLocked finds the complete copies of ns's report (cur) that are
// stale: the title's file was replaced at the origin, so the copy's
// version (or, for a copy whose version the node does not know, its size)
// is not the catalog's. The manager's catalog may be older than the copy
// (a node asks the origin for the title before each fill, the manager
// reads the catalog every catalog_refresh), so a copy that disagrees with
// it is stale only once a catalog read after the manager first saw the
// copy still disagrees: the first sight asks for a read at once
// (kickCatalog; with no origin to read, the catalog is taken as it is).
// A stale copy no session plays is evicted at once unless the origin is
// down (then it is the best the cluster has: lsm lets viewers play it
// while no fill can start) (removed from cur; a pin does not keep it, as
// the pin is the title's, not the old version's: the planner fills a
// pinned title again first); one that is playing stays and takes no new
// viewer (lsm.Holding.Stale), and is evicted at the first report where
// its sessions have ended. On a node without an origin
// (lsm.NodeSpec.NoOrigin), which could never fetch the new version, a
// stale copy is kept, stale, and never evicted by the manager. Each stale
// copy is logged once. It returns the
// stale copies left in cur (mu held). A fill of another version than the
// catalog's (begun before the title's file was replaced at the origin) is
// stale too once confirmed in the same way: it takes no new viewer (they
// would play the old version), and is evicted once complete and unused.
// A prefetch ordered there of a stale copy's title (ordered while the node
// was away, which came back holding the copy) is sent again after the
// copy's eviction (prefetchAfterStaleLocked).
func (m *Manager) staleLocked(ns *nodeState, cur map[string]*pb.StoredTitle, now time.Time) map[string]bool {
	cat := m.titles()
	gen := m.catalogGen.Load()
	// A node without an origin cannot fetch the new version: its stale
	// copies are kept (lsm sends them a viewer only when no other node can
	// take it, staleFallback), not evicted for nothing.
	n := m.sched.Node(ns.id)
	keep := n != nil && n.NoOrigin
	var left map[string]bool
	for id, t := range cur {
		c, ok := cat[id]
		if !ok || !staleCopy(t, c.SizeBytes, c.Version) {
			delete(ns.stale, id)
			continue
		}
		seen := ns.stale[id]
		if seen == nil {
			seen = &staleCopySeen{gen: gen}
			ns.stale[id] = seen
			if m.origin != nil {
				m.kickCatalog()
			}
		}
		if m.origin != nil && gen <= seen.gen {
			continue // not stale until the catalog read again says so
		}
		if !seen.warned {
			seen.warned = true
			msg := "stale copy: the title was replaced at the origin; the node's copy is evicted once no session plays it, and the title filled again"
			if keep {
				msg = "stale copy: the title was replaced at the origin; the node has no origin configured (node origin) and cannot fetch the new version: its copy is kept, and takes a viewer only when no other node can"
			}
			m.log.Warn(msg,
				"node", ns.id, "title", id, "copy_bytes", t.GetSizeBytes(), "copy_version", t.GetVersion(),
				"catalog_bytes", c.SizeBytes, "catalog_version", c.Version, "sessions", t.GetSessions(), "filling", t.GetFilling())
		}
		if t.GetFilling() {
			// A fill of the old version (begun before the file was
			// replaced): its viewers play on, new ones go elsewhere; it is
			// evicted as a copy once complete and unused.
			if left == nil {
				left = map[string]bool{}
			}
			left[id] = true
			continue
		}
		if t.GetSessions() == 0 && ns.active[id] == 0 && m.originUnusable() == "" && !keep && m.orderEvictLocked(ns, id, false, evictStale) {
			m.log.Info("stale copy evicted", "node", ns.id, "title", id)
			delete(ns.stale, id)
			delete(cur, id)
			m.prefetchAfterStaleLocked(ns, id, now)
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

// markReplacedLocked marks stale, at once, the copies and fills of the
// titles a catalog read just found replaced (ids) whose version, in their
// node's last report, is not the new catalog's (mu held): the scheduler
// sends them no new viewer from now on, not from each node's next report
// (a viewer admitted in between played the old version, and a heartbeat
// later found it stale). The copy was reported before the catalog read
// of generation before+1 that disagrees with it, which confirms it as
// staleLocked would (its first sight is recorded as of generation
// before); staleLocked, at the next report, logs it and evicts it once
// unused.
func (m *Manager) markReplacedLocked(ids []string, before uint64) {
	cat := m.titles()
	for _, ns := range m.nodes {
		for _, id := range ids {
			t, c := ns.titles[id], cat[id]
			if t == nil || !staleCopy(t, c.SizeBytes, c.Version) {
				continue
			}
			if seen := ns.stale[id]; seen == nil {
				ns.stale[id] = &staleCopySeen{gen: before}
			} else {
				seen.gen = min(seen.gen, before) // a report during the read saw it first
			}
			m.sched.SetStale(ns.id, id, true)
		}
	}
}

// staleCopy reports whether copy t is not the catalog's version of its
// title (size bytes, version): see otherVersion.
func staleCopy(t *pb.StoredTitle, size int64, version string) bool {
	return otherVersion(t.GetVersion(), t.GetSizeBytes(), version, size)
}

// otherVersion reports whether bytes of version v and whole-title size n
// (a node's copy, fill or partial) are not the catalog's version of the
// title (catVersion, catSize): versions are compared when both are known,
// sizes otherwise (a node or an origin that gives no version).
func otherVersion(v string, n int64, catVersion string, catSize int64) bool {
	if v != "" && catVersion != "" {
		return v != catVersion
	}
	return catSize > 0 && n != catSize
}

// staleHeld reports whether t, a node's copy of its title, is complete and
// of another version (or size) than the catalog cat's (staleCopy): the
// node holds the title, but not as the catalog has it now. A title not in
// the catalog has no stale copy.
func staleHeld(t *pb.StoredTitle, cat map[string]store.Title) bool {
	c, ok := cat[t.GetTitleId()]
	return ok && t != nil && !t.GetFilling() && staleCopy(t, c.SizeBytes, c.Version)
}

// prefetchAfterStaleLocked sends again, after the eviction of ns's stale
// copy of title just ordered (staleLocked), the prefetch of title still
// pending there (mu held): ordered while the node was away, which came
// back holding the copy, so that its first sending found the title held
// and did nothing (a node's prefetch of a title it holds fills nothing).
// Sent after the eviction, it fills the current version. A copy of the
// prefetch still in the queue is taken out (it would go before the
// eviction). Its order timeout counts from now. The operator's prefetch
// that a plan which saw the stale copy complete took for completed (the
// Replicator no longer tracks it as the operator's) is registered with
// the Replicator again (Prefetched), in flight.
func (m *Manager) prefetchAfterStaleLocked(ns *nodeState, title string, now time.Time) {
	p := ns.pending[title]
	if p == nil {
		return
	}
	ns.queue = slices.DeleteFunc(ns.queue, func(c *pb.NodeCommand) bool { return c.GetPrefetch().GetTitleId() == title })
	cmd := prefetchCmd(title)
	if !ns.push(cmd) {
		// Its order timeout fails it, to be retried after backoff.
		m.log.Warn("prefetch not sent again after the stale copy's eviction: command queue full", "node", ns.id, "title", title)
		return
	}
	p.at, p.partial, p.cmd = now, ns.partialOf(title), cmd
	if m.rep != nil && m.handOrders[[2]string{ns.id, title}] && !m.rep.OperatorPrefetch(ns.id, title) {
		// The operator's, which a plan that saw the stale copy took for
		// completed: tracked again as the operator's prefetch in flight.
		m.rep.Prefetched(ns.id, title, m.titles()[title].SizeBytes, now)
	}
	m.log.Info("prefetch sent again after the stale copy's eviction: the node fills the current version", "node", ns.id, "title", title)
}
