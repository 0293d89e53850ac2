package acm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/durtext"
	pb "vodcluster/proto/vodcluster/v1"
)

// ListPlacement returns the replica view (node -> titles stored, filling,
// ordered or reserved, from the nodes' reports and the orders and
// admissions since), each with
// its state in ListFills' words (stored, filling, ordered, reserved, node
// down), whether a pin protects it there and its node's site, filtered by title
// and/or node, in (title, node) order; the partial fills the nodes' last
// reports list (never copies: not in the replicas), filtered and ordered
// alike; the titles pinned to the cluster (filtered by title); and the
// pins to a node with where each stands (a copy's state, missing, or
// unknown node), filtered by title and node, in (node, title) order. NOT_FOUND
// for a title neither in the catalog, pinned, nor held or kept partly by
// a node (a title withdrawn at the origin is listed while copies of it
// remain), or a node neither registered nor with pins. standby: this
// manager does not hold the planner lock, and lists only the nodes
// registered with it.
func (a *admin) ListPlacement(_ context.Context, req *pb.ListPlacementRequest) (*pb.ListPlacementResponse, error) {
	m := a.m
	out := &pb.ListPlacementResponse{Standby: m.standby()}
	m.mu.Lock()
	// A filter must name something known: a title in the catalog or
	// pinned, a node registered or with pins.
	pinnedTitle, pinnedNode := false, false
	for _, p := range m.pins.List() {
		pinnedTitle = pinnedTitle || p.Title == req.GetTitleId()
		pinnedNode = pinnedNode || (p.Node != "" && p.Node == req.GetNodeId())
	}
	if id := req.GetTitleId(); id != "" && !pinnedTitle {
		if _, ok := m.titles()[id]; !ok && !m.heldAnywhereLocked(id) {
			m.mu.Unlock()
			return nil, status.Errorf(codes.NotFound, "title %q is not in the catalog and no node holds it", id)
		}
	}
	if id := req.GetNodeId(); id != "" && m.nodes[id] == nil && !pinnedNode {
		m.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "node %q is not registered%s", id, m.standbyHint())
	}
	for id, ns := range m.nodes {
		if req.GetNodeId() != "" && id != req.GetNodeId() {
			continue
		}
		site := ""
		if n := m.sched.Node(id); n != nil {
			site = n.Site
		}
		for _, t := range m.adminTitlesLocked(ns) {
			if req.GetTitleId() != "" && t.GetTitleId() != req.GetTitleId() {
				continue
			}
			seen := ns.stale[t.GetTitleId()]
			out.Replicas = append(out.Replicas, &pb.Replica{NodeId: id, TitleId: t.GetTitleId(),
				StoredBytes: t.GetStoredBytes(), SizeBytes: t.GetSizeBytes(), Filling: t.GetFilling(), State: m.copyState(ns, t),
				Pinned: m.pins.Protects(id, t.GetTitleId()), Stale: seen != nil && seen.warned, Version: t.GetVersion(), Site: site,
				KeptUntilUnixMs: m.keptUntilLocked(id, t.GetTitleId())})
		}
	}
	out.Partials = m.partialListLocked(req.GetNodeId(), req.GetTitleId())
	for _, p := range m.pins.List() {
		if req.GetTitleId() != "" && p.Title != req.GetTitleId() {
			continue
		}
		if p.Node == "" {
			out.ClusterPins = append(out.ClusterPins, p.Title)
			continue
		}
		if req.GetNodeId() != "" && p.Node != req.GetNodeId() {
			continue
		}
		np := &pb.NodePin{TitleId: p.Title, NodeId: p.Node, State: m.unseenNodeState(p.Node)}
		if ns := m.nodes[p.Node]; ns != nil {
			np.State = "missing"
			if t := m.adminTitlesLocked(ns)[p.Title]; t != nil || m.nodeDownLocked(p.Node) {
				np.State = m.copyState(ns, t)
			} else if m.neverFetchedLocked(p.Node, p.Title) {
				np.State = "never fetched"
			}
		}
		out.NodePins = append(out.NodePins, np)
	}
	m.mu.Unlock()
	sort.Slice(out.Replicas, func(i, j int) bool {
		a, b := out.Replicas[i], out.Replicas[j]
		if a.TitleId != b.TitleId {
			return a.TitleId < b.TitleId
		}
		return nodeIDLess(a.NodeId, b.NodeId)
	})
	return out, nil
}

// ListFills returns the fills in progress (on demand and prefetch) with
// their progress from the nodes' last reports, merged with the
// prefetches the storage manager ordered and not yet seen on their node
// (state ordered) or waiting for a retry after a failure (state backoff,
// with attempts and next_try_unix_ms), in (node, title) order; after a
// start or a takeover, the restored plan's nodes the first plan still
// waits for (plan_waits_for) and until when.
func (a *admin) ListFills(context.Context, *pb.ListFillsRequest) (*pb.ListFillsResponse, error) {
	m := a.m
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &pb.ListFillsResponse{Fills: m.fillListLocked(), Standby: m.standby()}
	r.PlanWaitsFor, r.PlanWaitsUntilUnixMs = m.planWaitLocked()
	return r, nil
}

func sortFills(fs []*pb.Fill) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].NodeId != fs[j].NodeId {
			return nodeIDLess(fs[i].NodeId, fs[j].NodeId)
		}
		return fs[i].TitleId < fs[j].TitleId
	})
}

// Prefetch orders a fill of a title on a node ahead of demand; with no
// node, where the storage manager chooses (Replicator.ChooseNode: a node
// the plan wants it on, else the one with the lowest expected load and
// disk use that can make room). Room is made by evicting titles neither
// playing, filling nor pinned. INVALID_ARGUMENT for a malformed id,
// NOT_FOUND for an unknown title or node, FAILED_PRECONDITION for a node
// out of service or without an origin (lsm.NodeSpec.NoOrigin; with no
// node named: when no node is in service, none in service has one, or
// every one that could fetch it holds a stale copy or fill of it),
// ALREADY_EXISTS when the
// node holds, fills or was
// ordered to fill it (the message says which), or it is queued there and
// still waits (with no node: when a node in service holds, fills or was
// ordered to fill it, the message naming each such node and which, since
// a prefetch naming no node fetches a title the cluster lacks and a second
// copy is had by naming its node; a stale copy or fill, of a version the
// origin has replaced, does not count; or when it is queued on a node that
// can take a fill: that node is taken as if named, so it is ordered there
// when a slot is free now, never placed on a second node; naming another
// node orders it there as well; one queued only on nodes out of service,
// with a disk fault or without an origin is placed as if queued nowhere,
// the answer naming those nodes, whose queued orders stay: ordered there
// too once the node can fill, unless cancelled (Evict); so are the
// operator's failed prefetches of it waiting there for their retry, and
// a refusal names them as well),
// RESOURCE_EXHAUSTED when no room can be made or the
// node's command queue is full. With the Replicator, a prefetch while the
// origin is unavailable, on a node
// with max_fills_per_node fills, or while fills take every origin
// channel, is queued (OK, its message says so) when its room could be
// made now with the prefetches queued there before it (else
// RESOURCE_EXHAUSTED): the first plan with a slot orders it, ahead of the
// plan's own prefetches (smm Replicator.Queued); vodctl fills lists it as
// queued. FAILED_PRECONDITION on a standby (notLeader: it never plans, so
// it would never order a queued prefetch, and the stored orders are the
// active manager's). UNAVAILABLE without the Replicator while the origin
// is unavailable (nothing to queue it in: ordered, its room would be made
// for a fill that cannot start), and "prefetch not ordered" when the store
// does not answer within adminStoreWait (nothing ordered nor stored); a
// write failing after the order is noted in the answer (OK).
func (a *admin) Prefetch(_ context.Context, req *pb.PlacementRequest) (_ *pb.PlacementAck, err error) {
	m := a.m
	if err = checkIDs(req); err != nil {
		return nil, err
	}
	if !m.Leader() {
		// A standby never plans, so a prefetch queued here would never
		// be ordered, and its write of the stored orders (the whole list)
		// races the active manager's.
		return nil, m.notLeader("prefetch the title on the active manager (a standby plans no storage: it would never order a prefetch queued here)")
	}
	t, ok := m.titles()[req.GetTitleId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "title %q is not in the catalog", req.GetTitleId())
	}
	if why := m.originUnusable(); m.rep == nil && why != "" {
		// No queue to wait in: ordered now, its room would be made for a
		// fill that cannot start.
		return nil, status.Errorf(codes.Unavailable, "prefetch not ordered: %s (a fill could not start, and making room for it would evict titles for nothing); order it again once it answers", why)
	}
	// One bound for the locks' waits, the store's check and the writes:
	// under vodctl's default --timeout (10 s).
	ctx, cancel := context.WithTimeout(context.Background(), adminStoreWait)
	defer cancel()
	// opMu through the hold's change and its write.
	unlock, err := m.adminStorageLock(ctx, "prefetch not ordered")
	if err != nil {
		return nil, err
	}
	defer m.opMu.Unlock()
	now := m.now()
	id, queuedAt := req.GetNodeId(), ""
	var passed, passedIDs []string // the nodes it is queued on that cannot take a fill: why, and their ids
	defer func() {
		// A refusal names the orders passed over as the success does:
		// they stay, ordered there once the node can fill.
		err = withPassed(err, t.ID, passed, passedIDs)
	}()
	if id == "" {
		// Queued on a node already: ordered there, as if the operator
		// had named that node, not placed on a second one. A node out
		// of service (dead, drained, ...) is passed over: the title is
		// placed as if queued nowhere, its order there left queued.
		if id, passed, passedIDs = m.queuedNodeLocked(t.ID); id != "" {
			queuedAt = id
		} else if where := m.heldWhereLocked(t.ID); len(where) > 0 {
			// A second copy only when the operator names its node.
			unlock()
			return nil, clusterHasIt(t.ID, where)
		} else {
			if id, err = m.chooseNodeLocked(t, now); err != nil {
				unlock()
				return nil, err
			}
		}
	}
	wait := m.prefetchWaitLocked(id)
	var ns *nodeState
	ns, err = m.prefetchCheckLocked(id, t)
	if err == nil {
		err = m.streamableLocked(id, t)
	}
	if queuedAt != "" && (err != nil || wait != "") {
		why := wait
		if err != nil {
			why = status.Convert(err).Message()
		}
		err = m.queuedAlreadyLocked(id, t.ID, why, now)
		unlock()
		return nil, status.Errorf(codes.AlreadyExists, "%s (name another NODE to prefetch it there as well)", status.Convert(err).Message())
	}
	if err == nil && wait != "" {
		// Queued there already: one entry, refused as a duplicate of a
		// prefetch ordered there is (a slot free now orders it instead).
		if err = m.queuedAlreadyLocked(id, t.ID, wait, now); err == nil {
			err = m.queueRoomLocked(ns, t, now)
		}
	}
	if err != nil {
		unlock()
		return nil, err
	}
	if wait == "" {
		if err := m.prefetchLocked(id, t, now); err != nil {
			unlock()
			return nil, err
		}
	}
	lifted := false
	if m.rep != nil {
		lifted = m.rep.Held(id, t.ID, now)
		if wait == "" {
			m.rep.Prefetched(id, t.ID, t.SizeBytes, now)
		} else {
			m.rep.Queued(id, t.ID, t.SizeBytes, now)
		}
		m.noteHandOrderLocked(id, t.ID)
	}
	m.dropEvictOrderLocked(id, t.ID) // wanted there again: not evicted by a restarted manager
	unlock()
	msg := "prefetch ordered"
	if wait != "" {
		msg = "prefetch queued: " + wait + "; ordered by the first plan with the origin answering, a fill slot there and a free origin channel (vodctl fills lists it)" + m.planWaitNote()
		m.log.Info("prefetch queued", "node", id, "title", t.ID, "why", wait)
	}
	if lifted {
		msg += "; the eviction hold there is lifted"
	}
	if m.rep != nil && m.rep.Config().EvictHold > 0 {
		msg += fmt.Sprintf("; once filled, kept there for %s (vodctl evict removes it, vodctl pin keeps it for good)", durtext.Written(m.rep.Config().EvictHold))
	}
	// Left queued: ordered there too once the node can fill, a second
	// copy unless the operator cancels it.
	msg += passedNote(t.ID, passed, passedIDs)
	// The order outlives a restart or a takeover until carried out.
	if err := m.savePrefetchOrderOpLocked(ctx, id, t.ID, true); err != nil {
		m.log.Error("store: prefetch order not saved", "node", id, "title", t.ID, "err", err)
		msg += fmt.Sprintf(" (order not saved, %s: a manager restart before it is carried out forgets it)", m.adminStoreNote(ctx, err))
	}
	// Also a hold another manager sharing the store wrote: lifted there too.
	if err := m.saveHoldOpLocked(ctx, id, t.ID); err != nil {
		m.log.Error("store: eviction hold not saved", "node", id, "title", t.ID, "err", err)
		msg += fmt.Sprintf(" (the stored hold not lifted, %s: a manager restart brings it back)", m.adminStoreNote(ctx, err))
	}
	return &pb.PlacementAck{NodeId: id, TitleId: t.ID, Message: msg}, nil
}

// Pin pins a title to a node, or to the cluster when no node is given: a
// title pinned to a node is prefetched there (not on a node without an
// origin, lsm.NodeSpec.NoOrigin, nor on one whose egress_bps is less
// than the title's bitrate: the answer says so) and never evicted
// from it; a
// title pinned to the cluster is kept somewhere (prefetched when no node
// has it, on a node that can stream it: when no registered node can, the
// answer says so) and none of its copies is evicted. The answer says
// what the pin set going (pinFetchesLocked): the title's fetch from the
// origin (PlacementAck.fetching) and the operator's eviction holds of the
// title it lifts (hold_overridden: on the node; pinned to the cluster, on
// every node, liftHoldsForPin). The pin is in the store
// before the answer. INVALID_ARGUMENT for a malformed id, NOT_FOUND for a
// title not in the catalog or a node never registered, UNAVAILABLE when
// the store fails (the pin is then not taken). FAILED_PRECONDITION on a
// standby (notLeader: the pins are changed on the active manager only).
func (a *admin) Pin(_ context.Context, req *pb.PlacementRequest) (*pb.PlacementAck, error) {
	return a.m.changePin(req, true)
}

// Unpin removes a pin (to the node, or to the cluster when no node is
// given). NOT_FOUND when there is no such pin, UNAVAILABLE when the store
// fails (the pin then stays), FAILED_PRECONDITION on a standby (notLeader).
func (a *admin) Unpin(_ context.Context, req *pb.PlacementRequest) (*pb.PlacementAck, error) {
	return a.m.changePin(req, false)
}

// lockBetweenPlans takes planMu and mu, and returns what gives them back:
// the operator's prefetch and evict wait for a plan in progress, so that
// the plan's orders, decided on the state before them, and the
// Replicator's answers (a failed prefetch cancelled) do not cross them.
func (m *Manager) lockBetweenPlans() (unlock func()) {
	m.planMu.Lock()
	m.mu.Lock()
	return func() {
		m.mu.Unlock()
		m.planMu.Unlock()
	}
}

// heldAnywhereLocked reports whether a node's view lists title, a copy or
// a partial (mu held).
func (m *Manager) heldAnywhereLocked(title string) bool {
	for _, ns := range m.nodes {
		if ns.titles[title] != nil || ns.reportedPartials[title] != nil {
			return true
		}
	}
	return false
}

// checkIDs validates a PlacementRequest's title (required) and node.
func checkIDs(req *pb.PlacementRequest) error {
	if !idPattern.MatchString(req.GetTitleId()) {
		return status.Errorf(codes.InvalidArgument, "title_id %q: want [A-Za-z0-9._-]{1,128}", clip(req.GetTitleId()))
	}
	if n := req.GetNodeId(); n != "" && !idPattern.MatchString(n) {
		return status.Errorf(codes.InvalidArgument, "node_id %q: want [A-Za-z0-9._-]{1,128}", clip(n))
	}
	return nil
}

// changePin pins or unpins, persists the pins, and undoes the change if
// the store fails. pinsMu keeps the writes in the order of the changes.
func (m *Manager) changePin(req *pb.PlacementRequest, pin bool) (*pb.PlacementAck, error) {
	if err := checkIDs(req); err != nil {
		return nil, err
	}
	node, title := req.GetNodeId(), req.GetTitleId()
	where := "the cluster"
	if node != "" {
		where = "node " + node
	}
	if !m.Leader() {
		// The write is of the whole list, which on a standby is the one
		// it loaded at its start or a node's registration since: it
		// would undo the active manager's pin changes made meanwhile.
		verb := map[bool]string{true: "pin", false: "unpin"}[pin]
		return nil, m.notLeader(verb + " the title on the active manager (the nodes registered here are told the pins at their next registration)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminStoreWait) // the lock's wait and the write
	defer cancel()
	if err := m.adminLock(ctx, &m.pinsMu, map[bool]string{true: "pin not pinned", false: "pin not unpinned"}[pin]); err != nil {
		return nil, err
	}
	defer m.pinsMu.Unlock()
	m.mu.Lock()
	var changed bool
	cancelled := ""
	if pin {
		if _, ok := m.titles()[title]; !ok {
			m.mu.Unlock()
			return nil, status.Errorf(codes.NotFound, "title %q is not in the catalog", title)
		}
		if _, known := m.knownTransports[node]; node != "" && m.sched.Node(node) == nil && !known {
			// A node the store knows (registered before this manager's
			// start or takeover, not since) may be pinned to: the pin
			// holds once it registers, as a stored pin to it does.
			m.mu.Unlock()
			return nil, status.Errorf(codes.NotFound, "node %q is not registered", node)
		}
		var err error
		if changed, err = m.pins.Pin(node, title); err != nil {
			m.mu.Unlock()
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if node != "" && m.evictOrders[node][title] {
			// The operator's eviction of it there waiting for the node
			// (down when ordered) is cancelled: not carried out at its
			// registration by a manager that restarts meanwhile.
			m.dropEvictOrderLocked(node, title)
			cancelled = "; the eviction of it ordered there while the node was down is cancelled"
		}
	} else if changed = m.pins.Unpin(node, title); !changed {
		// Said where it is pinned instead, if anywhere.
		var on []string
		for _, p := range m.pins.List() {
			if p.Title == title && p.Node != "" {
				on = append(on, p.Node)
			}
		}
		hint := ""
		switch {
		case node != "" && m.pins.Pinned("", title):
			hint = fmt.Sprintf(" (it is pinned to the cluster: vodctl unpin %s)", title)
		case node == "" && len(on) > 0:
			hint = fmt.Sprintf(" (it is pinned to node %s: vodctl unpin %s NODE)", strings.Join(on, ", "), title)
		}
		_, inCatalog := m.titles()[title]
		_, known := m.knownTransports[node]
		nodeUnknown := node != "" && m.sched.Node(node) == nil && !known
		m.mu.Unlock()
		switch {
		case nodeUnknown:
			// As pin says: not a pin merely missing (a stored pin to a
			// node not known is unpinned above).
			return nil, status.Errorf(codes.NotFound, "node %q is not registered", node)
		case !inCatalog:
			return nil, status.Errorf(codes.NotFound, "title %q is not in the catalog", title)
		}
		// Its end state holds: a repeat is not an error (pb.IsAlreadyDone).
		return nil, pb.AlreadyDone(fmt.Sprintf("title %q is not pinned to %s%s", title, where, hint))
	}
	blob, err := json.Marshal(m.pins)
	m.mu.Unlock()
	verb := map[bool]string{true: "pinned", false: "unpinned"}[pin]
	if !changed {
		return &pb.PlacementAck{NodeId: node, TitleId: title, Message: "already pinned"}, nil
	}
	if err == nil {
		err = m.st.PutState(ctx, statePins, blob)
	}
	if err != nil {
		m.mu.Lock()
		if pin {
			m.pins.Unpin(node, title)
		} else {
			_, _ = m.pins.Pin(node, title)
		}
		m.syncPinnedLocked(title) // a report in between may have carried the change
		for _, ns := range m.nodes {
			// A registration in between told its node the change.
			m.sendProtectLocked(ns, false)
		}
		m.mu.Unlock()
		m.log.Error("store: pin change not persisted, undone", "title", title, "node", node, "pin", pin, "err", err)
		return nil, status.Errorf(codes.Unavailable, "pin not %s: %s", verb, m.adminStoreMsg(ctx, err))
	}
	m.log.Info("pin changed by operator", "title", title, "where", where, "pin", pin)
	var lifted []string
	liftNote := ""
	if pin {
		lifted, liftNote = m.liftHoldsForPin(ctx, node, title)
	}
	m.mu.Lock()
	for _, ns := range m.nodes {
		m.sendProtectLocked(ns, false)
	}
	m.syncPinnedLocked(title) // the nodes' room for fills changes now, not at their next report
	planned := m.rep != nil
	var warn string
	var fetching, overridden bool
	if pin && node != "" {
		warn = m.pinWarningLocked(node, title)
		fetching, overridden = m.pinFetchesLocked(node, title, warn)
	} else if pin {
		warn = m.clusterPinWarningLocked(title)
		fetching, _ = m.pinFetchesLocked("", title, warn)
	}
	m.mu.Unlock()
	if !pin {
		m.kickPump() // room freed: queued admissions may fit now
	}
	m.kickPlan()
	if pin && !planned {
		verb += " (kept from eviction where it is; not fetched: storage.planner is none)"
	}
	return &pb.PlacementAck{NodeId: node, TitleId: title, Message: verb + pinDoneNote(node, fetching, overridden, lifted) + liftNote + warn + cancelled + m.planWaitNote(),
		Fetching: fetching, HoldOverridden: overridden || len(lifted) > 0}, nil
}

// syncPinnedLocked tells the scheduler which copies of title (every title
// when title is "") the pins protect on each node (mu held), so that
// their bytes are not counted as room for a fill; a node's report says
// the same at its next heartbeat.
func (m *Manager) syncPinnedLocked(title string) {
	for _, ns := range m.nodes {
		if title != "" {
			_ = m.sched.SetPinned(ns.id, title, m.pins.Protects(ns.id, title))
			continue
		}
		for id := range ns.titles {
			_ = m.sched.SetPinned(ns.id, id, m.pins.Protects(ns.id, id))
		}
	}
}

// keptUntilLocked returns until when (Unix ms) node's copy of title,
// filled by the operator's prefetch, is kept from eviction for room
// (smm Replicator.Kept), 0 when it is not (mu held).
func (m *Manager) keptUntilLocked(node, title string) int64 {
	if m.rep == nil {
		return 0
	}
	if until, ok := m.rep.KeptUntil(node, title, m.now()); ok {
		return until.UnixMilli()
	}
	return 0
}
