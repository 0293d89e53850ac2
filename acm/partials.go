package acm

import (
	"maps"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
)

// syncPartialsLocked makes a node's reported partials (fills cut short,
// kept to resume: pb.LoadReport.partials) its partial view and returns
// those for lsm, whose default policy charges a fill there only for the
// bytes missing (mu held; after syncTitlesLocked). Kept: those with a
// title id, a size and stored bytes in (0, size], whose size is the
// catalog's (a partial of a title since replaced at the origin is removed
// by the node's next fill of it: no head start). Given to lsm: those of a
// title the node neither holds nor fills as the manager counts it. The
// map is replaced, never changed in place: a plan in progress reads it
// without mu. The operator's view (reportedPartials) keeps those of
// another size too: they hold disk until the node removes them. A partial
// the operator ordered removed (evictingPartials) is left out of both
// while the report may have been sent before the node had the order.
func (m *Manager) syncPartialsLocked(ns *nodeState, reported []*pb.PartialTitle) []lsm.Partial {
	out := make([]lsm.Partial, 0, len(reported))
	var kept, all map[string]*pb.PartialTitle
	listed := make(map[string]bool, len(ns.evictingPartials))
	cat := m.titles()
	for _, p := range reported {
		id := p.GetTitleId()
		if id == "" || p.GetSizeBytes() <= 0 || p.GetStoredBytes() <= 0 || p.GetStoredBytes() > p.GetSizeBytes() {
			continue
		}
		if at, ok := ns.evictingPartials[id]; ok {
			listed[id] = true
			if ns.reports <= at+1 {
				continue // sent before the node had the order: gone soon
			}
			delete(ns.evictingPartials, id) // the node kept it
		}
		if all == nil {
			all = make(map[string]*pb.PartialTitle, len(reported))
		}
		all[id] = p
		if t, ok := cat[id]; ok && stalePartial(p, t.SizeBytes, t.Version) {
			continue
		}
		if kept == nil {
			kept = make(map[string]*pb.PartialTitle, len(reported))
		}
		kept[id] = p
		if ns.titles[id] == nil {
			out = append(out, lsm.Partial{Title: id, Bytes: p.GetStoredBytes(), Size: p.GetSizeBytes()})
		}
	}
	for id := range ns.evictingPartials {
		if !listed[id] {
			delete(ns.evictingPartials, id) // removed
		}
	}
	ns.partials, ns.reportedPartials = kept, all
	return out
}

// checkPartials returns the first malformed partial of a registration as
// an error for INVALID_ARGUMENT, or "".
func checkPartials(ps []*pb.PartialTitle) string {
	for _, p := range ps {
		switch {
		case p.GetTitleId() == "":
			return "partial without title_id"
		case p.GetSizeBytes() <= 0 || p.GetStoredBytes() <= 0 || p.GetStoredBytes() > p.GetSizeBytes():
			return "partial of " + p.GetTitleId() + ": need 0 < stored_bytes <= size_bytes"
		}
	}
	return ""
}

// partialBytes returns how many partials ns's last report listed and the
// bytes they hold on its disk (mu held).
func (ns *nodeState) partialBytes() (n int, bytes int64) {
	for _, p := range ns.reportedPartials {
		n++
		bytes += p.GetStoredBytes()
	}
	return n, bytes
}

// partialListLocked returns the partials of the nodes as the operator sees
// them (ListPlacement), of node and of title when not "", in (title, node)
// order (mu held).
func (m *Manager) partialListLocked(node, title string) []*pb.NodePartial {
	var out []*pb.NodePartial
	cat := m.titles()
	for id, ns := range m.nodes {
		if node != "" && id != node {
			continue
		}
		for tid, p := range ns.reportedPartials {
			if title != "" && tid != title {
				continue
			}
			t, known := cat[tid]
			out = append(out, &pb.NodePartial{NodeId: id, TitleId: tid, StoredBytes: p.GetStoredBytes(),
				SizeBytes: p.GetSizeBytes(), SinceUnixMs: p.GetSinceUnixMs(), Pinned: m.pins.Protects(id, tid),
				Stale: known && stalePartial(p, t.SizeBytes, t.Version)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TitleId != out[j].TitleId {
			return out[i].TitleId < out[j].TitleId
		}
		return nodeIDLess(out[i].NodeId, out[j].NodeId)
	})
	return out
}

// evictPartialLocked orders ns to remove its partial fill p (mu held),
// through the EvictCommand a copy's eviction uses (the node's store
// removes the partial of a title it does not hold), and forgets it in the
// manager's views (the scheduler's and the planner's). The caller checked
// that no copy of the title is on the node, filling or ordered, and that
// no viewer plays it there: the node would refuse while a fill resumes it.
// FAILED_PRECONDITION while the title is pinned to the node or the
// cluster, RESOURCE_EXHAUSTED when the node's command queue is full.
func (m *Manager) evictPartialLocked(ns *nodeState, p *pb.PartialTitle) error {
	title := p.GetTitleId()
	if m.pins.Pinned(ns.id, title) {
		return status.Errorf(codes.FailedPrecondition, "title %q is pinned to node %q (its partial fill there is what its prefetch resumes from): unpin it first", title, ns.id)
	}
	if m.pins.Pinned("", title) {
		return status.Errorf(codes.FailedPrecondition, "title %q is pinned to the cluster: unpin it first", title)
	}
	if !ns.push(evictCmd(title, evictOperator)) {
		return queueFull(ns.id)
	}
	without := func(ps map[string]*pb.PartialTitle) map[string]*pb.PartialTitle {
		if ps[title] == nil {
			return ps
		}
		c := maps.Clone(ps) // replaced, never changed in place: a plan may read it without mu
		delete(c, title)
		if len(c) == 0 {
			return nil
		}
		return c
	}
	ns.partials, ns.reportedPartials = without(ns.partials), without(ns.reportedPartials)
	if ns.evictingPartials == nil {
		ns.evictingPartials = map[string]uint64{}
	}
	ns.evictingPartials[title] = ns.reports
	_ = m.sched.DropPartial(ns.id, title)
	m.log.Info("partial fill removal ordered", "node", ns.id, "title", title, "stored_bytes", p.GetStoredBytes(), "size_bytes", p.GetSizeBytes())
	return nil
}

// evictCopyOrPartialLocked is the operator's eviction (mu held): node
// id's copy of title (evictLocked), or, when the node has no copy of it
// (stored, filling, ordered or reserved for a viewer) and no viewer of it
// but keeps a partial fill of it, that partial (evictPartialLocked), which
// it then returns. Errors: theirs.
func (m *Manager) evictCopyOrPartialLocked(id, title string) (*pb.PartialTitle, error) {
	if ns := m.nodes[id]; ns != nil && m.sched.Node(id) != nil && ns.titles[title] == nil && ns.active[title] == 0 {
		if p := ns.reportedPartials[title]; p != nil {
			return p, m.evictPartialLocked(ns, p)
		}
	}
	return nil, m.evictLocked(id, title, evictOperator)
}

// stalePartial reports whether partial p is not of the catalog's version
// of its title (size bytes, version): see otherVersion. The node removes a
// stale partial at the title's next fill there, so it is no head start.
func stalePartial(p *pb.PartialTitle, size int64, version string) bool {
	return otherVersion(p.GetVersion(), p.GetSizeBytes(), version, size)
}
