package acm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/proto/durtext"
	pb "vodcluster/proto/vodcluster/v1"
)

// Evict orders a node to remove a title: its copy, or, when the node has
// none but keeps a partial fill of it (a fill cut short, kept to resume),
// that partial (the answer says so). INVALID_ARGUMENT without a node or
// with a malformed id, NOT_FOUND for an unknown node or
// a title the node neither holds nor keeps a partial of,
// FAILED_PRECONDITION while a session plays or fills it there (an
// eviction never cuts a playing session, nor a fill resuming a partial),
// while a fill of it there is under way, or ordered and not yet reported,
// that is not a prefetch no viewer needs (cancellablePrefetchLocked: such
// a prefetch the node cancels, its partial dropped, or does not start,
// the answer says so, and it is neither counted failed nor retried, the
// operator's order of it forgotten as below), while it is reserved there
// for an admitted viewer, or while it is
// pinned to the node, or to the cluster with no other node in service
// holding it whole (copyElsewhereLocked), RESOURCE_EXHAUSTED when the
// node's command queue is full. With the Replicator, the title is then not planned on that node
// for the storage section's evict_hold (smm.ReplicatorConfig.EvictHold),
// kept in the store (when the store fails, the answer says the hold is
// not saved), and the operator's prefetch of it there that failed and
// waits for a retry, or that a restarted manager restores once a stale
// copy of it there is gone, is cancelled, its stored order too; and a title not
// on the node, or in use there as above (its fill under way, or cut short
// by the node's death, still in its last report), whose prefetch by the
// operator failed there and waits for a retry, or is queued for a fill
// slot, has that prefetch cancelled (OK, the answer saying why the title
// is not evicted).
// FAILED_PRECONDITION on a standby (notLeader: the stored holds and
// prefetch orders are the active manager's), UNAVAILABLE while a shared
// store does not answer (no manager holds the planner lock; a hold not
// saved is said so only in the lease's last stretch before it is lost),
// and "title not evicted" when it does not answer within adminStoreWait
// (nothing ordered nor stored; a write failing after it is noted, OK).
func (a *admin) Evict(_ context.Context, req *pb.PlacementRequest) (*pb.PlacementAck, error) {
	m := a.m
	node, title := req.GetNodeId(), req.GetTitleId()
	if err := checkIDs(req); err != nil {
		return nil, err
	}
	if node == "" {
		return nil, status.Error(codes.InvalidArgument, "name the node (node_id) to evict the title from")
	}
	if !m.Leader() {
		// The eviction hold and the cancelled prefetch orders are written
		// into the store's lists, which the active manager writes too.
		return nil, m.notLeader("evict the title on the active manager (the eviction holds and prefetch orders are its own)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminStoreWait) // as Prefetch's
	defer cancel()
	// opMu through the hold's change and its write.
	unlock, err := m.adminStorageLock(ctx, "title not evicted")
	if err != nil {
		return nil, err
	}
	defer m.opMu.Unlock()
	cancelled := m.cancellablePrefetchLocked(node, title) // the eviction cancels it: said below
	ordered := cancelled != nil && m.nodes[node].pending[title] != nil
	partial, err := m.evictCopyOrPartialLocked(node, title)
	if err != nil {
		// Not on the node, or in use there (its fill under way, or cut
		// short by the node's death and still in its last report, ...):
		// nothing evicted, but the operator's prefetch waiting there is
		// cancelled, as the answers that name this command say.
		code := status.Code(err)
		if (code == codes.NotFound || code == codes.FailedPrecondition) && m.rep != nil && m.rep.CancelPrefetch(node, title, m.nodeDownLocked(node)) {
			delete(m.handOrders, [2]string{node, title})
			unlock()
			msg := "not on the node: the operator's prefetch there, failed or queued, is cancelled"
			if code == codes.FailedPrecondition {
				msg = "the operator's prefetch there, failed or queued, is cancelled; the title there is not evicted: " + status.Convert(err).Message()
			}
			if err := m.savePrefetchOrderOpLocked(ctx, node, title, false); err != nil {
				m.log.Error("store: cancelled prefetch order not removed", "node", node, "title", title, "err", err)
				msg += fmt.Sprintf(" (its stored order not removed, %s: a manager restart may order it again)", m.adminStoreNote(ctx, err))
			}
			return &pb.PlacementAck{NodeId: node, TitleId: title, Message: msg}, nil
		}
		unlock()
		return nil, err
	}
	msg := "eviction ordered"
	if ordered {
		msg = "eviction ordered: its prefetch ordered there, not yet reported started by the node, is cancelled; not retried"
	} else if cancelled != nil {
		msg = fmt.Sprintf("eviction ordered: its prefetch under way there (%d of %d bytes received) is cancelled, its partial fill dropped; not retried",
			cancelled.GetStoredBytes(), cancelled.GetSizeBytes())
	}
	if m.pins.Pinned("", title) && partial == nil {
		msg += "; the title stays pinned to the cluster, whole on another node in service"
	}
	if partial != nil {
		msg = fmt.Sprintf("no copy there: removal of its partial fill ordered (%d of %d bytes kept, %.0f%%)",
			partial.GetStoredBytes(), partial.GetSizeBytes(), 100*float64(partial.GetStoredBytes())/float64(partial.GetSizeBytes()))
	}
	down := false
	if n := m.sched.Node(node); n != nil && !n.Alive {
		down = true
		msg += fmt.Sprintf("; node %s is down: carried out when it is back", node)
		if partial == nil {
			m.noteEvictOrderLocked(node, title) // stored below: a restart or a takeover orders it at the node's registration
		}
	}
	planner := m.rep != nil
	if planner {
		if m.rep.CancelPrefetch(node, title, m.nodeDownLocked(node)) { // as Evicted would, but said
			msg += "; the operator's failed prefetch there is cancelled"
		}
		m.rep.Evicted(node, title, m.now())
		delete(m.handOrders, [2]string{node, title})
		m.dropRestoringLocked(node, title)
		msg += fmt.Sprintf("; not planned (prefetched) on %s again for %s; a viewer sent there may still fill it", node, durtext.Written(m.rep.Config().EvictHold))
	}
	unlock()
	if down && partial == nil {
		// Its command waits in the node's queue, which a restart or a
		// takeover loses: stored, it is ordered at the node's registration.
		if err := m.saveEvictOrderOpLocked(ctx, node, title, true); err != nil {
			m.log.Error("store: eviction order not saved", "node", node, "title", title, "err", err)
			msg += fmt.Sprintf(" (order not saved, %s: a manager restart before the node is back forgets it)", m.adminStoreNote(ctx, err))
		}
	}
	if planner {
		if err := m.saveHoldOpLocked(ctx, node, title); err != nil { // the hold outlives a restart or a takeover
			m.log.Error("store: eviction hold not saved", "node", node, "title", title, "err", err)
			msg += fmt.Sprintf(" (hold not saved, %s: a manager restart forgets it)", m.adminStoreNote(ctx, err))
		}
		// The operator's order there, failed and cancelled with a partial's
		// removal, is not to be restored by a restart or a takeover.
		if err := m.savePrefetchOrderOpLocked(ctx, node, title, false); err != nil {
			m.log.Error("store: cancelled prefetch order not removed", "node", node, "title", title, "err", err)
			msg += fmt.Sprintf(" (a stored prefetch order of it there not removed, %s: a manager restart may order it again)", m.adminStoreNote(ctx, err))
		}
	}
	return &pb.PlacementAck{NodeId: node, TitleId: title, Message: msg}, nil
}

// cancellablePrefetchLocked returns node id's view of title when the
// operator's eviction cancels it there (mu held): a prefetch under way
// (the node's report shows it filling) that the node reports preemptible
// (no viewer reads it, is on its way for it or pins it there: the one a
// fill on demand would stop for its room), or a prefetch ordered there
// and not reported yet (ns.pending: the node starting it, or its command
// still queued here; its view then has no byte stored), on a node alive,
// with no session of it there that this manager admitted or reserved, and not pinned
// there or to the cluster since the report. nil otherwise.
func (m *Manager) cancellablePrefetchLocked(id, title string) *pb.StoredTitle {
	ns := m.nodes[id]
	if ns == nil || m.nodeDownLocked(id) {
		return nil
	}
	st := ns.titles[title]
	if !st.GetFilling() || st.GetSessions() > 0 || ns.active[title] > 0 || ns.awaiting[title] || m.pins.Protects(id, title) {
		return nil
	}
	if ns.pending[title] == nil && (!st.GetPreemptible() || !fillRunning(fillState(ns, title, false))) {
		return nil
	}
	return st
}

// evictLocked orders node id to remove title for reason (evictOperator,
// evictPlanner; mu held). NOT_FOUND for an
// unknown node or a title the node does not hold, FAILED_PRECONDITION
// while a session plays or fills it there (an eviction never cuts a
// playing session; the operator's cancels a prefetch under way that no
// viewer needs: cancellablePrefetchLocked), while it is reserved there for an admitted viewer
// (as of the node's last report: ns.awaiting), or while it is pinned to
// the node, or to the cluster but for an operator's with a copy elsewhere
// (copyElsewhereLocked), RESOURCE_EXHAUSTED when its command queue is full
// (the operator's cancel of a prefetch whose command waits there takes
// that command out, which leaves room for the eviction).
func (m *Manager) evictLocked(id, title, reason string) error {
	ns := m.nodes[id]
	if ns == nil || m.sched.Node(id) == nil {
		return status.Errorf(codes.NotFound, "node %q is not registered", id)
	}
	st := ns.titles[title]
	if st == nil && ns.active[title] == 0 {
		if _, ok := m.titles()[title]; !ok {
			return status.Errorf(codes.NotFound, "node %q does not hold title %q, which is not in the catalog", id, title)
		}
		// Its end state holds: an operator's repeat is not an error (pb.IsAlreadyDone).
		return pb.AlreadyDone(fmt.Sprintf("node %q does not hold title %q", id, title))
	}
	if ns.awaiting[title] {
		return status.Errorf(codes.FailedPrecondition, "title %q is reserved on node %q for a viewer admitted there (its fill starts when the viewer arrives, or the reservation ends at the token's expiry)", title, id)
	}
	cancel := reason == evictOperator && m.cancellablePrefetchLocked(id, title) != nil
	if !cancel && (ns.active[title] > 0 || st.GetSessions() > 0 || st.GetFilling()) {
		return status.Errorf(codes.FailedPrecondition, "title %q on node %q %s", title, id, inUseWhy(ns, title, st, m.lead != nil, m.copyState(ns, st)))
	}
	if m.pins.Pinned(id, title) {
		return status.Errorf(codes.FailedPrecondition, "title %q is pinned to node %q: unpin it first", title, id)
	}
	if m.pins.Pinned("", title) && (reason != evictOperator || !m.copyElsewhereLocked(id, title)) {
		return status.Errorf(codes.FailedPrecondition, "title %q is pinned to the cluster and no other node in service holds it whole: unpin it first", title)
	}
	dequeued := false
	if cancel && ns.pending[title] != nil {
		// Its command still queued here is not sent; taken out first, it
		// leaves the eviction room in a full queue.
		n := len(ns.queue)
		ns.queue = slices.DeleteFunc(ns.queue, func(c *pb.NodeCommand) bool { return c.GetPrefetch().GetTitleId() == title })
		dequeued = len(ns.queue) < n
	}
	if !m.orderEvictLocked(ns, title, true, reason) {
		return queueFull(id) // nothing was taken out (dequeued false): the queue was full without it
	}
	if cancel {
		// The node stops the fill and drops its bytes: its whole room is
		// freed (orderEvictLocked counted the bytes stored), and its
		// vanishing from the next report is not the prefetch failing. A
		// prefetch ordered and not reported yet is no longer waited for
		// (nor sent again at the node's registration); its command still
		// queued here was taken out above. The eviction is sent all the same: a
		// copy of the order may have reached the node already (one sent
		// before a registration that queued it again), which the node,
		// starting it, stops on the eviction (vodnode's prefetchRuns), or
		// cancels as a fill under way; a node given none has nothing to
		// evict.
		ns.diskFree += max(st.GetSizeBytes()-st.GetStoredBytes(), 0)
		delete(ns.filling, title)
		if ns.pending[title] != nil {
			delete(ns.pending, title)
			m.log.Info("eviction ordered: the prefetch ordered there, not reported started, is cancelled", "node", id, "title", title, "unsent", dequeued)
			return nil
		}
		m.log.Info("eviction ordered: the prefetch under way there is cancelled", "node", id, "title", title, "stored_bytes", st.GetStoredBytes(), "size_bytes", st.GetSizeBytes())
		return nil
	}
	m.log.Info("eviction ordered", "node", id, "title", title)
	return nil
}

// inUseWhy says what keeps title in use on ns (mu held), for an
// eviction refused: the sessions of it playing there, viewers admitted
// and on their way apart, and its fill in vodctl fills' words (fill:
// copyState's; a prefetch ordered, a fill cut short by the node's death,
// a fill on demand, a prefetch a viewer needs: the fills the operator's
// eviction does not cancel). The sessions playing are this
// manager's and, when the node's count of them (its last report) is more
// than those with the viewers admitted there, the others it counts:
// sessions this manager does not know, said to be another manager's (or ending) when
// shared (a store two managers share), else ending (the report came
// before their ENDED) or ended by this manager while the node was cut off
// (a manager of its own alone admits to its nodes).
func inUseWhy(ns *nodeState, title string, st *pb.StoredTitle, shared bool, fill string) string {
	admitted, playing := 0, 0
	var idle []string // of those playing, the idle ones (ns.idle), longest idle first
	for _, s := range ns.sessions {
		switch {
		case s.Title != title:
		case s.State == store.StateAdmitted:
			admitted++
		default:
			playing++
			if _, ok := ns.idle[s.ID]; ok {
				idle = append(idle, s.ID)
			}
		}
	}
	slices.SortFunc(idle, func(a, b string) int { return ns.idle[a].Compare(ns.idle[b]) })
	// The node's count beyond the sessions this manager knows there (an
	// admitted viewer may have started already): sessions it does not know.
	others := int(st.GetSessions()) - playing - admitted
	whose := "ending, or ended by this manager while the node was cut off"
	if shared {
		whose = "another manager's, or ending: the node reported before their ENDED"
	}
	var why []string
	switch {
	case others > 0 && playing > 0:
		why = append(why, fmt.Sprintf("has %d sessions playing (%d this manager's: vodctl sessions; %d more by the node's report: %s)",
			playing+others, playing, others, whose))
	case others > 0:
		why = append(why, fmt.Sprintf("has %d %s playing by the node's report (%s)", others, plural(others, "session"), whose))
	case playing > 0:
		why = append(why, fmt.Sprintf("has %d %s playing or paused (vodctl sessions%s)", playing, plural(playing, "session"), idleNote(idle)))
	}
	if admitted > 0 {
		why = append(why, fmt.Sprintf("is reserved for %d %s admitted and on the way (vodctl sessions: admitted; until it arrives or its token expires)", admitted, plural(admitted, "viewer")))
	}
	switch {
	case !st.GetFilling():
	case fill == "ordered":
		why = append(why, "has a prefetch ordered, not yet reported started, that a viewer needs: one a viewer is on the way for, or one pinned there (vodctl fills: ordered; evict it once complete)")
	case fill == "node down":
		why = append(why, "was filling when its node went down (vodctl fills: node down)")
	case !st.GetPrefetch():
		why = append(why, fmt.Sprintf("is filling on demand, started for a viewer (vodctl fills: %s; a fill on demand is not cancelled, its viewer there or not: evict it once complete)", fill))
	case len(why) > 0 || st.GetSessions() > 0:
		why = append(why, fmt.Sprintf("is filling (vodctl fills: %s; a prefetch a viewer reads is not cancelled: evict it once complete)", fill))
	case st.GetPreemptible(): // only the operator's eviction cancels it (evictLocked)
		why = append(why, fmt.Sprintf("is filling (vodctl fills: %s; evict it once complete)", fill))
	default:
		why = append(why, fmt.Sprintf("is filling a prefetch a viewer needs: one read since it started, one a viewer is on the way for, or one pinned there (vodctl fills: %s; evict it once complete)", fill))
	}
	return strings.Join(why, " and ")
}

// idleNote is what inUseWhy says of the idle sessions among those that
// keep a title in use (ids, longest idle first: an HTTP viewer that has
// asked nothing, an RTSP one paused and silent, past the node's
// session_timeout): their node keeps them until its pause_timeout, for a
// viewer coming back (a download finished minutes ago, a player
// paused), and the operator can end them now. "" when none.
func idleNote(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	const most = 3
	names := strings.Join(ids[:min(len(ids), most)], " ")
	if len(ids) > most {
		names += " …"
	}
	return fmt.Sprintf("; %d of them idle, kept until the node's pause_timeout for a viewer coming back: vodctl sessions end %s ends them now", len(ids), names)
}
