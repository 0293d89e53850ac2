package acm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/proto/durtext"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// prefetchLocked orders a fill of t on node id ahead of demand (mu held),
// after the evictions that make its room (chosen by the node's Evictor,
// never a title in use or pinned). NOT_FOUND for an unknown node,
// FAILED_PRECONDITION for a node out of service, with a disk fault or
// without an origin (lsm.NodeSpec.NoOrigin: it cannot fill),
// ALREADY_EXISTS when the
// node holds, fills or was ordered to fill t, or a viewer admitted there
// plays or awaits it (its fill on demand starts when the viewer arrives),
// RESOURCE_EXHAUSTED when t is larger than the node's disk, no room can
// be made or the node's command queue is full; on error nothing was
// ordered.
func (m *Manager) prefetchLocked(id string, t store.Title, now time.Time) error {
	ns, err := m.prefetchCheckLocked(id, t)
	if err != nil {
		return err
	}
	if _, err := m.makeRoomLocked(ns, t, now, true, 0); err != nil {
		return err
	}
	cmd := prefetchCmd(t.ID)
	if !ns.push(cmd) {
		return queueFull(id)
	}
	ns.setTitle(t.ID, &pb.StoredTitle{TitleId: t.ID, SizeBytes: t.SizeBytes, Filling: true, Prefetch: true})
	ns.pending[t.ID] = &pendingFill{at: now, bytes: t.SizeBytes, partial: ns.partialOf(t.ID), cmd: cmd}
	ns.diskFree -= t.SizeBytes
	_ = m.sched.SetReplica(id, t.ID, true, t.SizeBytes)
	m.log.Info("prefetch ordered", "node", id, "title", t.ID, "size_bytes", t.SizeBytes)
	return nil
}

// nodeFills is a node's fills in progress or ordered: the titles its last
// report and the orders since show filling, or its report's count if more.
func nodeFills(titles map[string]*pb.StoredTitle, activeFills int) int {
	nf := 0
	for _, st := range titles {
		if st.GetFilling() {
			nf++
		}
	}
	return max(nf, activeFills)
}

// prefetchWaitLocked says why an operator's prefetch on node id cannot be
// ordered now (mu held): the origin is unavailable, the node has
// max_fills_per_node fills (smm.ReplicatorConfig.MaxFillsPerNode), or
// fills on live nodes take every origin channel (OriginChannels), as the
// planner's own prefetches wait; "" when it can (always without the Replicator).
func (m *Manager) prefetchWaitLocked(id string) string {
	if m.rep == nil {
		return ""
	}
	if why := m.originUnusable(); why != "" { // ordered, its room would be made for a fill that cannot start
		return why
	}
	ns, n := m.nodes[id], m.sched.Node(id)
	if ns == nil || n == nil {
		return ""
	}
	if nf, max := nodeFills(ns.titles, n.ActiveFills), m.rep.Config().MaxFillsPerNode; nf >= max {
		return fmt.Sprintf("node %q has %d fills in progress (max_fills_per_node %d)", id, nf, max)
	}
	fills := 0
	for _, o := range m.sched.Nodes {
		if ons := m.nodes[o.ID]; ons != nil && o.Alive {
			fills += nodeFills(ons.titles, o.ActiveFills)
		}
	}
	if fills >= m.OriginChannels {
		return fmt.Sprintf("fills take all %d origin channels", m.OriginChannels)
	}
	return ""
}

// queuedAlreadyLocked refuses (ALREADY_EXISTS) an operator's prefetch of
// title on node id that is queued there already (smm.FillQueued: waiting
// for a fill slot or an origin channel; mu held, with the Replicator), as
// one ordered there already is: the answer says for how long it has been
// queued, how many are queued there (their order is the plan's: by the
// titles' value), and why it waits (wait). nil when it is not queued
// there.
func (m *Manager) queuedAlreadyLocked(id, title, wait string, now time.Time) error {
	var since time.Time
	found, queued := false, 0
	for _, f := range m.rep.Fills() {
		if f.Node != id || f.State != smm.FillQueued {
			continue
		}
		queued++
		if f.Title == title {
			found, since = true, f.Since
		}
	}
	if !found {
		return nil
	}
	return status.Errorf(codes.AlreadyExists, "a prefetch of %q on node %q is already queued (for %s, %s queued there in all: vodctl fills): %s; ordered by the first plan with the origin answering, a fill slot there and a free origin channel",
		title, id, durtext.Written(max(now.Sub(since), 0).Round(time.Second)), counted(queued, "prefetch", "prefetches"), wait)
}

// queuedNodeLocked returns the node where the operator's prefetch of
// title is queued (smm.FillQueued: waiting for a fill slot or an origin
// channel; the first by id if on several) among the nodes that can take a
// fill (fillableLocked: registered, in service, without a disk fault,
// with an origin), "" when none or without the Replicator (mu held).
// passed says, for each node that cannot take a fill where the operator's
// prefetch is queued or failed and waits for its retry (smm.FillBackoff:
// retried there once the node can fill, as a queued one is ordered), why,
// and passedIDs names those nodes (both by node id): a prefetch naming no
// node passes those over, their orders left as they are.
func (m *Manager) queuedNodeLocked(title string) (node string, passed, passedIDs []string) {
	if m.rep == nil {
		return "", nil, nil
	}
	why := map[string]string{}
	for _, f := range m.rep.Fills() {
		// The operator's failed prefetch (handOrders; not the plan's
		// own, which Evict does not cancel) counts where it cannot be
		// filled now; on a node that can fill it, it is not where the
		// title is queued: the node is chosen as if it were nowhere.
		retry := f.State == smm.FillBackoff && m.handOrders[[2]string{f.Node, title}]
		if f.Title != title || (f.State != smm.FillQueued && !retry) {
			continue
		}
		if _, err := m.fillableLocked(f.Node, title); err != nil {
			why[f.Node] = status.Convert(err).Message()
			if retry {
				why[f.Node] += m.retryWhyLocked(f)
			}
			continue
		}
		if retry {
			continue
		}
		if node == "" || f.Node < node {
			node = f.Node
		}
	}
	for id := range why {
		passedIDs = append(passedIDs, id)
	}
	slices.SortFunc(passedIDs, compareNodeIDs)
	for _, id := range passedIDs {
		passed = append(passed, why[id])
	}
	return node, passed, passedIDs
}

// retryWhyLocked says, for queuedNodeLocked, where the operator's
// prefetch f waiting for its retry on a node out of service stands (mu
// held): failed, or, on a node alive and reachable whose report shows it
// filling (the planner counts the prefetch of a node out of service
// failed, though a drained node goes on with it), under way.
func (m *Manager) retryWhyLocked(f smm.FillStatus) string {
	n, ns := m.sched.Node(f.Node), m.nodes[f.Node]
	if n != nil && n.Alive && !n.Unreachable && ns != nil && ns.titles[f.Title].GetFilling() {
		return " (its prefetch there is under way, vodctl fills: vodctl evict cancels it while no viewer needs it, else removes the copy once complete; retried there should it fail)"
	}
	return fmt.Sprintf(" (its prefetch there failed %s and waits for its retry)", counted(f.Attempts, "time", "times"))
}

// queueRoomLocked refuses (RESOURCE_EXHAUSTED) to queue an operator's
// prefetch of t on ns (mu held, with the Replicator) when its room could
// not be made now with the operator's prefetches already queued there
// counted as taken: the titles neither playing, filling nor pinned (the
// node's Evictor asked, nothing evicted) free too little. Room that only
// fills ending would free is not counted: such a prefetch is refused, as
// one ordered at once would be.
func (m *Manager) queueRoomLocked(ns *nodeState, t store.Title, now time.Time) error {
	if !ns.reported || t.SizeBytes <= 0 {
		return nil
	}
	need := t.SizeBytes - ns.diskFree
	for _, f := range m.rep.Fills() {
		if f.Node == ns.id && f.State == smm.FillQueued && f.Title != t.ID {
			need += f.Bytes
		}
	}
	if need <= 0 {
		return nil
	}
	// smm.CanFree, not Victims: some evictors (gdsf-classic, w-tinylfu)
	// take Victims' answer as evictions.
	if !smm.CanFree(m.storage.Evictor(ns.id), m.itemsLocked(ns, t.ID), need, now) {
		return status.Errorf(codes.ResourceExhausted, "%v on node %q for %q: %d bytes to free beyond its free disk with the prefetches queued there, more than its titles not playing, filling, pinned or kept after an operator's prefetch take",
			errNoRoom, ns.id, t.ID, need)
	}
	return nil
}

// fillableLocked checks that node id can take a fill of title now (mu
// held): NOT_FOUND when it is not registered (forgotten), FAILED_PRECONDITION
// when it is out of service, reports a disk fault or has no origin; it
// returns the node.
func (m *Manager) fillableLocked(id, title string) (*nodeState, error) {
	ns := m.nodes[id]
	n := m.sched.Node(id)
	if ns == nil || n == nil {
		return nil, status.Errorf(codes.NotFound, "node %q is not registered", id)
	}
	if !m.sched.InService(n) {
		return nil, status.Errorf(codes.FailedPrecondition, "node %q is not in service: it %s", id, outOfService(n))
	}
	if ns.diskFault {
		return nil, status.Errorf(codes.FailedPrecondition, "node %q cannot write its title cache (it reports a disk fault: %s)", id, diskFaultHelp)
	}
	if n.NoOrigin {
		return nil, status.Errorf(codes.FailedPrecondition, "node %q has no origin configured (node origin): it cannot fetch %q, it plays only the titles already on its disk", id, title)
	}
	return ns, nil
}

// diskFaultHelp says, in a refusal for a node's disk fault, where it
// shows and when it ends: vodctl nodes does not show it.
const diskFaultHelp = "a title directory full, read only or failing, as the manager's log and the node's say; fills resume there once a test write succeeds, tried every 30 s"

// prefetchCheckLocked makes the checks of prefetchLocked that come before
// any room is made (mu held), with its errors, and returns the node.
func (m *Manager) prefetchCheckLocked(id string, t store.Title) (*nodeState, error) {
	ns, err := m.fillableLocked(id, t.ID)
	if err != nil {
		return nil, err
	}
	n := m.sched.Node(id)
	if how := heldHow(ns, n, t.ID); how != "" {
		return nil, heldAlready(id, t.ID, how)
	}
	if ns.active[t.ID] > 0 {
		return nil, status.Errorf(codes.AlreadyExists, "a viewer admitted on node %q plays or awaits %q (its fill starts when the viewer arrives)", id, t.ID)
	}
	if d := n.Capacity.DiskBytes; d > 0 && t.SizeBytes > d {
		return nil, status.Errorf(codes.ResourceExhausted, "title %q (%d bytes) is larger than the disk of node %q (%d bytes)", t.ID, t.SizeBytes, id, d)
	}
	if len(ns.queue) >= cmdQueue {
		return nil, queueFull(id)
	}
	return ns, nil
}

// outOfService says why node n is out of service (lsm
// Scheduler.InService false), for an operator's order refused there:
// each reason, dead or unreachable first, and the vodctl node command
// that undoes the operator's settings (draining, weight 0), said to put
// it back in service only when the node is otherwise in service.
func outOfService(n *lsm.Node) string {
	var why []string
	switch {
	case !n.Alive:
		why = append(why, "is dead (no heartbeat: vodctl nodes)")
	case n.Unreachable:
		why = append(why, "is unreachable (its heartbeat stream broke; dead unless it reconnects)")
	}
	away := len(why) > 0
	var set, undo []string
	if n.Draining {
		set, undo = append(set, "is draining"), append(undo, "--undrain")
	}
	if n.Weight <= 0 {
		set, undo = append(set, "has weight 0"), append(undo, "--weight N")
	}
	if len(set) > 0 {
		back := ""
		if away {
			back = "once back, "
		}
		why = append(why, fmt.Sprintf("%s (%svodctl node %s %s puts it back in service)", strings.Join(set, " and "), back, n.ID, strings.Join(undo, " ")))
	}
	if len(why) == 0 {
		return "is in service"
	}
	return strings.Join(why, " and ")
}

// errNoRoom is makeRoomLocked's refusal when all is required.
var errNoRoom = errors.New("not enough room")

// queueFullMsg starts the message of queueFull's error.
const queueFullMsg = "command queue of node "

// queueFull is the RESOURCE_EXHAUSTED of an order to node id whose
// command queue is full (the node takes no command: stuck, or its stream
// too slow).
func queueFull(id string) error {
	return status.Errorf(codes.ResourceExhausted, queueFullMsg+"%q is full", id)
}

// makeRoomLocked frees room for a fill of t on ns (mu held) when the
// node's free disk (last report minus fills ordered since) is below t's
// size (see reclaimLocked, and stops for its argument). It reports
// whether the room is there.
func (m *Manager) makeRoomLocked(ns *nodeState, t store.Title, now time.Time, all bool, stops int64) (bool, error) {
	if !ns.reported || t.SizeBytes <= 0 || ns.diskFree >= t.SizeBytes {
		return true, nil
	}
	return m.reclaimLocked(ns, t.ID, t.SizeBytes-ns.diskFree, now, all, stops)
}

// reclaimLocked frees need bytes on ns for a fill of title (mu held): the
// node's Evictor (smm.Storage.Evictor) names victims among the titles
// neither playing, filling nor pinned, and EvictCommands go down the
// node's stream. With all, it evicts nothing unless the victims free the
// whole need (RESOURCE_EXHAUSTED otherwise); without, it evicts what it
// can (a fill on demand streams to its viewer anyway). It reports whether
// the victims, with stops bytes the node frees itself for a fill on
// demand once they are gone (the prefetches it stops for it:
// preemptibleBytesLocked; 0 for a prefetch), free the whole need.
func (m *Manager) reclaimLocked(ns *nodeState, title string, need int64, now time.Time, all bool, stops int64) (bool, error) {
	items := m.itemsLocked(ns, title)
	ev := m.storage.Evictor(ns.id)
	// The refusals that evict nothing come before Victims, whose answer
	// some evictors (gdsf-classic, w-tinylfu) take as evictions: the
	// victims free all that is evictable when they cannot free need. (A
	// queue with room for fewer commands than the victims is still found
	// after it.)
	if all && !smm.CanFree(ev, items, need-stops, now) {
		return false, status.Errorf(codes.ResourceExhausted, "%v on node %q for %q: %d bytes to free beyond its free disk, more than its titles not playing, filling, pinned or kept after an operator's prefetch take",
			errNoRoom, ns.id, title, need)
	}
	if len(ns.queue)+1 > cmdQueue {
		return false, queueFull(ns.id)
	}
	victims, ok := ev.Victims(items, need, now)
	if !ok && stops > 0 {
		freed := stops
		for _, it := range items {
			if slices.Contains(victims, it.Title) {
				freed += it.Bytes
			}
		}
		ok = freed >= need
	}
	if !ok && all { // an evictor short of its own CanFree
		return false, status.Errorf(codes.ResourceExhausted, "%v on node %q for %q: %d bytes to free beyond its free disk, more than its titles not playing, filling, pinned or kept after an operator's prefetch take",
			errNoRoom, ns.id, title, need)
	}
	if len(ns.queue)+len(victims)+1 > cmdQueue {
		return false, queueFull(ns.id)
	}
	for _, v := range victims {
		m.orderEvictLocked(ns, v, false, evictRoom)
	}
	m.log.Info("eviction for a fill", "node", ns.id, "title", title, "need_bytes", need, "victims", victims, "stops_bytes", stops, "enough", ok)
	return ok, nil
}

// preemptibleBytesLocked returns the bytes of the prefetches on ns that
// the node stops to make room for a fill on demand of another title than
// skip (mu held): those its last report gives preemptible (a prefetch no
// viewer plays, is on its way for or pins there) and those ordered it has
// not reported yet, less the ones a viewer admitted since plays or awaits
// and the ones pinned since (lsm counts the same as room: Holding.Preemptible).
func (m *Manager) preemptibleBytesLocked(ns *nodeState, skip string) int64 {
	var n int64
	for id, st := range ns.titles {
		if id == skip || !st.GetFilling() || !st.GetPreemptible() || ns.active[id] > 0 || m.pins.Protects(ns.id, id) {
			continue
		}
		n += max(st.GetStoredBytes(), st.GetSizeBytes())
	}
	return n
}

// plural is word with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// orderEvictLocked sends an EvictCommand for title to ns and forgets the
// copy in the manager's views (mu held). forget: the eviction was not the
// Evictor's own choice, so its history of the title is dropped too;
// reason goes with the command (evictCmd). It reports false when the
// node's command queue is full.
func (m *Manager) orderEvictLocked(ns *nodeState, title string, forget bool, reason string) bool {
	if m.evictHook != nil {
		m.evictHook(ns, title, reason)
	}
	if !ns.push(evictCmd(title, reason)) {
		m.log.Warn("eviction not sent: command queue full", "node", ns.id, "title", title)
		return false
	}
	ns.diskFree += ns.titles[title].GetStoredBytes()
	ns.dropTitle(title)
	ns.evicting[title] = ns.reports
	_ = m.sched.DropReplica(ns.id, title)
	if r, ok := m.storage.Evictor(ns.id).(smm.Recorder); ok && forget {
		r.Forget(title)
	}
	return true
}

// chooseNodeLocked picks the node for an operator's prefetch of t that
// names none (mu held), never a node without an origin
// (lsm.NodeSpec.NoOrigin) nor one reporting a disk fault (which
// prefetchCheckLocked refuses) nor one whose egress_bps is less than t's
// bitrate (which streamableLocked refuses): the Replicator's ChooseNode, or without one the
// node in service lacking t with the most free disk: a node that
// measured its free disk before one that reports it unknown (whose
// diskFree, unknownDiskFree, would otherwise always win), those among
// themselves by their budget left (disk_bytes less the bytes stored or
// filling there; ties by node id).
// NOT_FOUND for a title the planner does not know,
// FAILED_PRECONDITION when no node is in service, none in service has
// an origin and no disk fault, none lacking t can stream it, or every
// one that could fetch it holds a stale copy or fill of it (a node with
// a current one is Prefetch's ALREADY_EXISTS, heldWhereLocked, before
// it asks here),
// RESOURCE_EXHAUSTED when no node can take it.
func (m *Manager) chooseNodeLocked(t store.Title, now time.Time) (string, error) {
	inService, lacking, noOrigin := 0, 0, 0
	var faulty, small []string // small: lacking t, their egress less than its bitrate
	for nid, ns := range m.nodes {
		if n := m.sched.Node(nid); n != nil && m.sched.InService(n) && ns.reported {
			if n.NoOrigin {
				noOrigin++
				continue
			}
			if ns.diskFault {
				faulty = append(faulty, nid) // it cannot write a fill (prefetchCheckLocked refuses it)
				continue
			}
			if ns.titles[t.ID] == nil && !canStream(n, t) {
				small = append(small, nid) // streamableLocked refuses it
				continue
			}
			inService++
			if ns.titles[t.ID] == nil {
				lacking++
			}
		}
	}
	if lacking == 0 && len(small) > 0 {
		slices.SortFunc(small, compareNodeIDs)
		return "", status.Errorf(codes.FailedPrecondition, "no node in service lacking %q can stream it: its bitrate, %.1f Mbit/s, is more than the egress_bps of %s (give a node more egress_bps or publish the title at a lower bitrate)",
			t.ID, float64(t.BitrateBps)/1e6, strings.Join(small, ", "))
	}
	slices.SortFunc(faulty, compareNodeIDs)
	if inService == 0 && len(faulty) > 0 {
		// vodctl nodes does not show a disk fault: name the nodes.
		return "", status.Errorf(codes.FailedPrecondition, "every node in service with an origin reports a disk fault (%s: %s): none can fetch %q now",
			strings.Join(faulty, ", "), diskFaultHelp, t.ID)
	}
	if inService == 0 && noOrigin > 0 {
		return "", status.Errorf(codes.FailedPrecondition, "no node in service has an origin configured (node origin): none can fetch %q", t.ID)
	}
	if inService == 0 {
		return "", status.Errorf(codes.FailedPrecondition, "no node is in service (every registered node is dead, unreachable, draining or at weight 0: vodctl nodes): none can fetch %q now", t.ID)
	}
	if inService > 0 && lacking == 0 {
		// Prefetch refuses a title a node in service has before it
		// chooses a node (heldWhereLocked): each copy or fill left here
		// is stale, of a version the origin has replaced.
		also := ""
		if len(faulty) > 0 {
			also = fmt.Sprintf(" (but %s, reporting a disk fault, which cannot write it)", strings.Join(faulty, ", "))
		}
		return "", status.Errorf(codes.FailedPrecondition, "every node in service%s that can fetch %q holds a stale copy or fill of it (the origin has another version; vodctl placement --title %s): none can fetch the current one until that copy is evicted, once no session plays it",
			also, t.ID, t.ID)
	}
	if m.rep != nil {
		view := m.viewLocked(map[string]smm.TitleInfo{t.ID: planTitle(t)})
		if len(small) > 0 {
			view.Nodes = slices.DeleteFunc(slices.Clone(view.Nodes), func(v smm.NodeView) bool { return slices.Contains(small, v.ID) })
		}
		id, err := m.rep.ChooseNode(t.ID, view, now)
		switch {
		case errors.Is(err, smm.ErrUnknownTitle):
			return "", status.Errorf(codes.NotFound, "title %q is not in the catalog", t.ID)
		case err != nil:
			return "", status.Errorf(codes.ResourceExhausted, "no node in service can take %q now: none lacking it can make room for it, or its fill there is in flight, failed recently or held off by an operator's eviction (vodctl fills; a prefetch naming the NODE lifts the hold)", t.ID)
		}
		return id, nil
	}
	id, best, bestKnown := "", int64(0), false
	for nid, ns := range m.nodes {
		n := m.sched.Node(nid)
		if n == nil || !m.sched.InService(n) || n.NoOrigin || ns.diskFault || ns.titles[t.ID] != nil || !canStream(n, t) {
			continue
		}
		free, known := ns.diskFree, !ns.diskUnknown
		if !known {
			free = n.Capacity.DiskBytes - n.StoredBytes
		}
		if id == "" || (known && !bestKnown) || (known == bestKnown && (free > best || (free == best && nid < id))) {
			id, best, bestKnown = nid, free, known
		}
	}
	if id == "" {
		return "", status.Errorf(codes.ResourceExhausted, "no node in service lacks %q", t.ID)
	}
	return id, nil
}
