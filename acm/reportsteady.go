package acm

import (
	"hash/maphash"

	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
)

// A node reports its whole disk every heartbeat (1 s): at a large
// operator's scale thousands of titles a node, from hundreds of nodes.
// Applying such a report (syncTitlesLocked, the scheduler's replica view)
// costs about 0.6 µs a title under the manager's lock, which every
// admission also takes (BenchmarkLoadReport: 2,500 titles, ~1.7 ms). Most
// reports say what the one before said; a steady report skips that work.
//
// A report is steady when (steadyLocked):
//   - what it says of the disk (reportPrint: each title's size, bytes
//     stored, fill state and version; the partials; not the per-title
//     session counts and access times, which change all the time and
//     feed nothing but the node's title list) is what the last report
//     applied in full said, and that report was applied as it was (the
//     node was quiet then: its replica view became the report);
//   - the node is quiet: no prefetch ordered and not yet reported, no fill
//     in progress, no eviction or partial removal in flight, no fill
//     placed whose viewer has not arrived, no stale copy, no operator's
//     prefetch to restore, and no failed fill in the report;
//   - nothing changed the scheduler's view of the node since
//     (lsm.Node.ViewEpoch: a placement that booked a fill, an eviction,
//     a pin), and the catalog is the same (a replaced title makes copies
//     stale).
//
// A steady report then only replaces the node's title list (built before
// the lock is taken) and its load figures. What a report says of the
// sessions (session_ids, idle_sessions) is not in the fingerprint: it is
// applied from every report, steady or not (Manager.report).

// steadySeed keys reportPrint's hash, one per process.
var steadySeed = maphash.MakeSeed()

// reportPrint returns a fingerprint of what r says of the node's disk
// (titles and partials, in any order: a sum of per-entry hashes), and r's
// titles by id, as syncTitlesLocked would keep them for a quiet node. The
// fingerprint is never 0.
func reportPrint(r *pb.LoadReport) (uint64, map[string]*pb.StoredTitle) {
	titles := make(map[string]*pb.StoredTitle, len(r.GetTitles()))
	sum := uint64(len(r.GetTitles()))<<32 | uint64(len(r.GetPartials()))
	for _, t := range r.GetTitles() {
		if storedTitleFault(t) != "" {
			continue // left out of the view (syncTitlesLocked)
		}
		titles[t.GetTitleId()] = t
		flags := boolInt(t.GetFilling()) | boolInt(t.GetPrefetch())<<1 | boolInt(t.GetPreemptible())<<2
		sum += entryPrint('t', t.GetTitleId(), t.GetVersion(), t.GetSizeBytes(), t.GetStoredBytes(), flags)
	}
	for _, p := range r.GetPartials() {
		sum += entryPrint('p', p.GetTitleId(), p.GetVersion(), p.GetSizeBytes(), p.GetStoredBytes(), p.GetSinceUnixMs())
	}
	if sum == 0 {
		sum = 1
	}
	return sum, titles
}

// entryPrint hashes one title or partial of a report: its id and version
// with maphash, its numbers mixed in with splitmix64's finaliser.
func entryPrint(kind byte, id, version string, a, b, c int64) uint64 {
	x := maphash.String(steadySeed, id) ^ mix64(maphash.String(steadySeed, version)+uint64(kind))
	x = mix64(x ^ uint64(a))
	x = mix64(x ^ uint64(b))
	return mix64(x ^ uint64(c))
}

// mix64 is splitmix64's finaliser (Steele et al., OOPSLA 2014).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// steadyState is what the last report applied in full left of a node
// (reportsteady.go); print 0: none to compare with.
type steadyState struct {
	print uint64 // reportPrint of that report
	epoch uint64 // the scheduler's lsm.Node.ViewEpoch after it
	gen   uint64 // Manager.catalogGen then
}

// quietLocked reports whether nothing is in flight on ns that a report's
// titles settle (mu held): see the comment at the top of the file.
func (m *Manager) quietLocked(ns *nodeState) bool {
	if len(ns.pending)+len(ns.filling)+len(ns.evicting)+len(ns.awaiting)+len(ns.stale)+len(ns.evictingPartials) > 0 {
		return false
	}
	if _, ok := m.restoring[ns.id]; ok {
		return false
	}
	for _, s := range ns.sessions {
		if s.reserved && s.res.Fill && !s.fillSeen {
			return false
		}
	}
	return true
}

// steadyLocked reports whether r, of fingerprint print, is a steady report
// of ns whose scheduler node is n (mu held).
func (m *Manager) steadyLocked(ns *nodeState, n *lsm.Node, print uint64, r *pb.LoadReport) bool {
	st := ns.steady
	return st.print != 0 && st.print == print && n != nil && n.ViewEpoch() == st.epoch &&
		m.catalogGen.Load() == st.gen && len(r.GetFailedFills()) == 0 && m.quietLocked(ns)
}
