package acm

import (
	"maps"
	"time"

	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
)

// syncTitlesLocked makes a node's report (Register or a load report) its
// title view (mu held) and returns the holdings for lsm and the node's
// free disk as the manager counts it: the reported free bytes minus the
// fills ordered but not yet reported, plus titles ordered evicted the
// report still shows.
//
// It also learns the fate of fills, for the Replicator: a fill the last
// report showed that is now complete is done (FillDone); a prefetch that
// vanished before completing, that the node reports failed, or that no
// report showed within OrderTimeout of its order, failed (FillFailed:
// retried after backoff). Either outcome asks for a plan (a channel is
// free again). A completed operator's prefetch starts its keep
// (smm.Replicator.Kept), which asks for the popularity snapshot, where
// the keeps are stored, to be saved at once (kickPopularitySave).
func (m *Manager) syncTitlesLocked(ns *nodeState, reported []*pb.StoredTitle, failed []*pb.FillFailure, diskFree int64, now time.Time) ([]lsm.Holding, int64) {
	cur := make(map[string]*pb.StoredTitle, len(reported))
	seen := make(map[string]bool, len(reported))
	for _, t := range reported {
		id := t.GetTitleId()
		if storedTitleFault(t) != "" {
			continue // malformed: not in the view (report warns)
		}
		seen[id] = true
		if at, ok := ns.evicting[id]; ok {
			if ns.reports <= at+1 && !t.GetFilling() && t.GetSessions() == 0 {
				// Sent before the node had the order: gone soon.
				diskFree += t.GetStoredBytes()
				continue
			}
			if ns.reports <= at+1 && t.GetFilling() && t.GetPreemptible() && t.GetSessions() == 0 {
				// A prefetch the operator's eviction cancels, sent before
				// the node had the order: its fill stops, its room freed.
				diskFree += max(t.GetStoredBytes(), t.GetSizeBytes())
				continue
			}
			delete(ns.evicting, id) // the node kept it (a viewer came): it stays
		}
		cur[id] = t
	}
	for id := range ns.evicting {
		if !seen[id] {
			delete(ns.evicting, id) // evicted
		}
	}
	stale := m.staleLocked(ns, cur, now)
	cat := m.titles()
	m.withdrawnLocked(ns, cur, cat, now)

	done := map[string]bool{}
	lost := map[string]string{} // title -> why, prefetches only
	for id, pre := range ns.filling {
		switch t := cur[id]; {
		case t != nil && !t.GetFilling():
			done[id] = true
		case t == nil && pre && seen[id]:
			// Reported, then left out by staleLocked's eviction.
			lost[id] = "completed a version the origin has since replaced (the copy is evicted as stale)"
		case t == nil && pre:
			lost[id] = "vanished from the node before completing"
		}
	}
	for _, f := range failed {
		id := f.GetTitleId()
		if id == "" {
			continue
		}
		if f.GetPrefetch() || ns.pending[id] != nil || ns.filling[id] {
			lost[id] = "node reports: " + f.GetReason()
		}
		delete(ns.pending, id)
	}
	for id, p := range ns.pending {
		if t := cur[id]; t != nil && staleHeld(t, cat) {
			// A copy of another version, held when the prefetch was
			// ordered while the node was away: not the prefetch's fill.
			// It is sent again once the copy is evicted as stale
			// (prefetchAfterStaleLocked); a copy kept (playing, or the
			// origin down) fails it at the order timeout.
			if now.Sub(p.at) > m.OrderTimeout {
				delete(ns.pending, id)
				lost[id] = "the node holds a version the origin has since replaced"
			}
			continue
		}
		if t := cur[id]; t != nil {
			delete(ns.pending, id)
			if !t.GetFilling() {
				done[id] = true
			}
			continue
		}
		if now.Sub(p.at) > m.OrderTimeout {
			delete(ns.pending, id)
			lost[id] = "not started within the order timeout"
		}
	}
	var keeps uint64
	if m.rep != nil {
		keeps = m.rep.KeepsStarted()
	}
	for id := range done {
		if m.rep != nil {
			m.rep.FillDone(ns.id, id, now)
		}
		delete(lost, id)
		m.orderDoneLocked(ns.id, id, false)
	}
	if m.rep != nil && m.rep.KeepsStarted() != keeps {
		// Stored only in the snapshot: a restart or a takeover before the
		// next PopularitySave would lose the keep, and the copy with it.
		m.kickPopularitySave()
	}
	for id, why := range lost {
		if cur[id] != nil && cur[id].GetFilling() {
			continue // failed, and filling again (a viewer's fill)
		}
		if m.rep != nil && m.fillFailedLocked(ns.id, id, why, now) {
			continue // the operator's, given up: said so
		}
		m.log.Warn("prefetch failed: retried after backoff if the plan still wants it there or the operator ordered it", "node", ns.id, "title", id, "why", why)
	}
	if len(done)+len(lost) > 0 {
		m.kickPlan()
	}

	ns.filling = make(map[string]bool, len(ns.filling))
	for id, t := range cur {
		if t.GetFilling() {
			ns.filling[id] = t.GetPrefetch()
		}
	}
	for _, s := range ns.sessions {
		if s.reserved && s.res.Fill && cur[s.Title] != nil {
			s.fillSeen = true // the node's own report shows the session's fill
		}
	}
	// Prefetches ordered and fills placed whose viewer has not arrived
	// yet are not in the report: keep them in the view so that nothing
	// fills them twice and their room stays counted.
	var booked map[string]bool // in the view, not in the report (lsm.Holding.Booked)
	book := func(id string) {
		if booked == nil {
			booked = map[string]bool{}
		}
		booked[id] = true
	}
	for id, p := range ns.pending {
		// A prefetch the node has not started: a viewer's fill placed there
		// takes its room (the node refuses the prefetch then, or stops it).
		// One of a title held as a stale copy keeps the copy in the view
		// until its eviction.
		if cur[id] != nil {
			continue
		}
		cur[id] = &pb.StoredTitle{TitleId: id, SizeBytes: p.bytes, Filling: true, Prefetch: true, Preemptible: true}
		book(id)
		diskFree -= p.bytes
	}
	clear(ns.awaiting)
	for _, s := range ns.sessions {
		// Until the node's report shows its fill (even once the viewer
		// started: the report may be older than the fill); once shown, a
		// title gone from the report is gone from the node (the fill
		// failed, or the title was evicted after it).
		if s.reserved && s.res.Fill && cur[s.Title] == nil && !s.fillSeen {
			size := cat[s.Title].SizeBytes
			cur[s.Title] = &pb.StoredTitle{TitleId: s.Title, SizeBytes: size, Filling: true}
			ns.awaiting[s.Title] = true
			book(s.Title)
			diskFree -= size
		}
	}
	m.restorePrefetchesLocked(ns, cur, now)
	holdings := make([]lsm.Holding, 0, len(cur))
	for id, t := range cur {
		b := t.GetStoredBytes()
		if t.GetFilling() {
			b = max(b, t.GetSizeBytes())
		}
		holdings = append(holdings, lsm.Holding{Title: id, Bytes: b, Filling: t.GetFilling(), Pinned: m.pins.Protects(ns.id, id), Stale: stale[id], Booked: booked[id],
			Preemptible: t.GetFilling() && t.GetPreemptible()})
	}
	for id := range ns.hits {
		if cur[id] == nil {
			ns.dropHit(id)
		}
	}
	ns.replaceTitles(cur)
	return holdings, diskFree
}

// fillState says where a fill in ns's view of its titles (or booked
// since its last report: bookedFillsLocked) stands, in vodctl fills'
// words: "node down" (down: in the last report of a node now missing its
// heartbeats, the transfer stopped with it), "ordered" (a prefetch sent
// and not in a report since), "reserved" (a fill on demand that starts
// when its viewer reaches the node: in the view as such, ns.awaiting, or
// booked and not in the view yet), "origin retry" (its transfers failed
// since the origin last answered, retried by the node:
// StoredTitle.origin_retries), "origin wait" (its transfer not started at
// the origin yet: StoredTitle.origin_wait; queued for a channel, as a
// prefetch that gave its channel to a viewer's fill is, or paying the
// origin's setup delay), else "filling".
func fillState(ns *nodeState, title string, down bool) string {
	// fillRunning must know every state of a fill the node runs.
	switch {
	case down:
		return "node down"
	case ns.pending[title] != nil:
		return "ordered"
	case ns.awaiting[title] || ns.titles[title] == nil:
		return "reserved"
	case ns.titles[title].GetOriginRetries() > 0:
		return "origin retry"
	case ns.titles[title].GetOriginWait():
		return "origin wait"
	}
	return "filling"
}

// fillRunning reports whether state (fillState's) is of a fill its node
// runs: "filling", its transfer not started at the origin yet, or retried
// through an outage of the origin.
func fillRunning(state string) bool {
	return state == "filling" || state == "origin wait" || state == "origin retry"
}

// copyState says where title stands in ns's view (mu held), in vodctl
// fills' words: "node down" while ns misses its heartbeats (its last
// report's copy, complete or not; t may then be nil: a title pinned to
// ns that it does not hold), else "stored" when complete, else as
// fillState.
func (m *Manager) copyState(ns *nodeState, t *pb.StoredTitle) string {
	down := m.nodeDownLocked(ns.id)
	if !t.GetFilling() && !down {
		return "stored"
	}
	return fillState(ns, t.GetTitleId(), down)
}

// nodeDownLocked reports whether node id is registered and not alive
// (it misses its heartbeats), or not in the scheduler (mu held).
func (m *Manager) nodeDownLocked(id string) bool {
	n := m.sched.Node(id)
	return n == nil || !n.Alive
}

// bookedFillsLocked returns the fills on demand the manager booked on ns
// for viewers it admitted there since the node's last report (mu held):
// not in ns's view of its titles until that report is applied, which
// keeps them there as reserved (syncTitlesLocked, by the same test). By
// title, as that view would hold them; nil when there are none.
func (m *Manager) bookedFillsLocked(ns *nodeState) map[string]*pb.StoredTitle {
	var out map[string]*pb.StoredTitle
	for _, s := range ns.sessions {
		if !s.reserved || !s.res.Fill || s.fillSeen || ns.titles[s.Title] != nil {
			continue
		}
		if out == nil {
			out = map[string]*pb.StoredTitle{}
		}
		out[s.Title] = &pb.StoredTitle{TitleId: s.Title, SizeBytes: m.titles()[s.Title].SizeBytes, Filling: true}
	}
	return out
}

// adminTitlesLocked is ns's view of its titles with the fills booked
// since its last report (bookedFillsLocked), for the operator's lists
// (mu held): ns.titles itself when there are none.
func (m *Manager) adminTitlesLocked(ns *nodeState) map[string]*pb.StoredTitle {
	booked := m.bookedFillsLocked(ns)
	if booked == nil {
		return ns.titles
	}
	out := maps.Clone(ns.titles)
	if out == nil {
		out = map[string]*pb.StoredTitle{}
	}
	maps.Copy(out, booked)
	return out
}

// fillListLocked merges the fills the nodes report (with their progress),
// and those the manager booked for viewers admitted since (reserved), with
// the Replicator's prefetches (ordered, filling, in backoff with their
// attempts and next retry), in (node, title) order (mu held). A fill not
// in progress (ordered, reserved, queued, in backoff) shows the bytes of
// the node's partial of the title, if it reports one: what its next
// attempt resumes from.
func (m *Manager) fillListLocked() []*pb.Fill {
	type key struct{ node, title string }
	byKey := map[key]*pb.Fill{}
	for id, ns := range m.nodes {
		down := m.nodeDownLocked(id)
		for tid, t := range m.adminTitlesLocked(ns) {
			if !t.GetFilling() {
				continue
			}
			f := &pb.Fill{NodeId: id, TitleId: tid, StoredBytes: t.GetStoredBytes(), SizeBytes: t.GetSizeBytes(),
				Prefetch: t.GetPrefetch(), State: fillState(ns, tid, down)}
			if p := ns.pending[tid]; p != nil && f.State == "ordered" {
				f.SinceUnixMs = p.at.UnixMilli()
			}
			if p := ns.partials[tid]; p != nil && !fillRunning(f.State) && f.StoredBytes == 0 {
				f.StoredBytes = p.GetStoredBytes() // the fill resumes from the node's partial
			}
			byKey[key{id, tid}] = f
		}
	}
	if m.rep != nil {
		for _, fs := range m.rep.Fills() {
			k := key{fs.Node, fs.Title}
			f := byKey[k]
			if f == nil {
				f = &pb.Fill{NodeId: fs.Node, TitleId: fs.Title, SizeBytes: fs.Bytes, Prefetch: true, State: string(fs.State)}
				if ns := m.nodes[fs.Node]; ns != nil {
					// In backoff or queued: the bytes the node keeps of
					// it (a partial), which its next attempt resumes from.
					if p := ns.partials[fs.Title]; p != nil {
						f.StoredBytes = p.GetStoredBytes()
					}
				}
				byKey[k] = f
			}
			f.Attempts = int32(fs.Attempts)
			if !fs.Since.IsZero() {
				f.SinceUnixMs = fs.Since.UnixMilli()
			}
			if !fs.NextTry.IsZero() && !fillRunning(f.State) {
				f.State, f.NextTryUnixMs = string(fs.State), fs.NextTry.UnixMilli()
			}
		}
	}
	for k, f := range byKey {
		if f.State != "origin retry" {
			continue
		}
		// The node's retries of the transfer, not the planner's of the
		// prefetch (which count failed fills).
		t := m.nodes[k.node].titles[k.title]
		f.Attempts, f.NextTryUnixMs, f.OriginError = t.GetOriginRetries(), t.GetOriginRetryAtUnixMs(), t.GetOriginError()
	}
	out := make([]*pb.Fill, 0, len(byKey))
	for _, f := range byKey {
		out = append(out, f)
	}
	sortFills(out)
	return out
}
