package acm

import (
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
// without mu.
func (m *Manager) syncPartialsLocked(ns *nodeState, reported []*pb.PartialTitle) []lsm.Partial {
	out := make([]lsm.Partial, 0, len(reported))
	var kept map[string]*pb.PartialTitle
	cat := m.titles()
	for _, p := range reported {
		id := p.GetTitleId()
		if id == "" || p.GetSizeBytes() <= 0 || p.GetStoredBytes() <= 0 || p.GetStoredBytes() > p.GetSizeBytes() {
			continue
		}
		if t, ok := cat[id]; ok && t.SizeBytes > 0 && t.SizeBytes != p.GetSizeBytes() {
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
	ns.partials = kept
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
