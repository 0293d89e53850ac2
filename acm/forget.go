package acm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/durtext"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// stateForgotten names the nodes operators forgot on a shared store (map
// node id -> when, Unix ms, as JSON): a standby that knew such a node
// forgets it too when it takes over (dropForgotten).
const stateForgotten = "forgotten-nodes"

// forgottenKeep is how long a forget is remembered in stateForgotten for
// the standby (entries older are dropped at the next forget): a standby
// that takes over later still lists the node, dead, until it is forgotten
// there too.
const forgottenKeep = 30 * 24 * time.Hour

// ForgetNode forgets a dead or decommissioned node (vodctl node forget):
// it leaves the scheduler and the node list, and so the placement, the
// fills and the metrics; the sessions left on it (orphaned when it died)
// end, their entries deleted from the store; the commands queued for its
// return (evictions, prefetches, drain) are dropped; the storage
// manager's prefetches on it and its eviction holds go; its stored
// operator setting (drain, weight, overload threshold), the operator's
// prefetch orders for it (statePrefetches) and its pins are removed from
// the store. Should the node come back (it was cut off, not
// dead) still playing the sessions ended here, it is told to end them,
// as after RestoreGrace. Pins to the node are removed rather than
// refused: they protect nothing on a node that is gone, and the answer
// names their titles to pin elsewhere. A node registering later under
// the id starts fresh. On a shared store the forget is also recorded
// (stateForgotten), so that a standby that knew the node forgets it when
// it takes over. The first plan after a start or a takeover no longer
// waits for the node (planwait.go), which is known here for that alone
// when the restored plan names it.
//
// Errors: INVALID_ARGUMENT for a malformed id; FAILED_PRECONDITION while
// the node is alive (its heartbeats arrive: drain it, stop it, and forget
// it once it is listed dead), and on a standby manager (it does not see
// whether the node reports to the active one); NOT_FOUND for an id
// neither registered nor with stored state; UNAVAILABLE when the store
// does not answer within adminStoreWait (5 s, the locks' waits and every
// store call of the forget within it): before any change when its state
// cannot be read, or after the node was forgotten in this manager when a
// write fails (the message says what is left in the store, which
// forgetting again removes, and how many of the sessions' entries are
// deleted when the store answers again; the answer carries
// pb.ReasonNotSaved, pb.IsNotSaved).
func (a *admin) ForgetNode(_ context.Context, req *pb.ForgetNodeRequest) (*pb.ForgetNodeResponse, error) {
	m := a.m
	id := req.GetNodeId()
	if !idPattern.MatchString(id) {
		return nil, status.Errorf(codes.InvalidArgument, "node id %q: want 1-128 of [A-Za-z0-9._-]", clip(id))
	}
	if !m.Leader() {
		return nil, m.notLeader("forget the node on the active manager; a standby forgets it when it takes over")
	}
	// pinsMu, opMu: the pins, node settings and holds do not change
	// between the reads and the writes below, nor does a registration's
	// reload of the node's setting come in between.
	ctx, cancel := context.WithTimeout(context.Background(), adminStoreWait) // the locks' waits and the store's
	defer cancel()
	if err := m.adminLock(ctx, &m.pinsMu, "node "+id+" not forgotten"); err != nil {
		return nil, err
	}
	defer m.pinsMu.Unlock()
	if err := m.adminLock(ctx, &m.opMu, "node "+id+" not forgotten"); err != nil {
		return nil, err
	}
	defer m.opMu.Unlock()
	st, err := m.readStoredNodeState(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "node %s not forgotten: its stored state cannot be read (%s)", id, m.adminStoreMsg(ctx, err))
	}

	out := &pb.ForgetNodeResponse{NodeId: id}
	now := m.now()
	unlock := m.lockBetweenPlans()
	n := m.sched.Node(id)
	if n != nil && n.Alive {
		ago := now.Sub(n.LastHeartbeat)
		dead := time.Duration(m.sched.Config.MissedHeartbeats) * m.sched.Config.HeartbeatInterval
		unlock()
		return nil, status.Errorf(codes.FailedPrecondition,
			"node %s is alive (last heartbeat %s ago): drain it (vodctl node %s --drain), let its sessions end, stop it, and forget it once vodctl nodes lists it dead (%s after its last heartbeat, at once when it shuts down cleanly)",
			id, durtext.About(ago), id, durtext.Written(dead))
	}
	var ended []*session
	for _, s := range m.sessions {
		if s.Node == id {
			ended = append(ended, s)
		}
	}
	_, setHere := m.nodeSettings[id]
	_, setStored := st.settings[id]
	unpinned := slices.Concat(m.pins.NodePins(id), st.pins.NodePins(id))
	slices.Sort(unpinned)
	unpinned = slices.Compact(unpinned)
	storedHolds := 0
	for _, h := range st.holds {
		if h.Node == id {
			storedHolds++
		}
	}
	_, transport := m.knownTransports[id]
	if n == nil && m.nodes[id] == nil && len(ended) == 0 && !setHere && !setStored && len(unpinned) == 0 && storedHolds == 0 && !transport && !m.waitedFor(id) {
		unlock()
		return nil, status.Errorf(codes.NotFound, "node %q is not registered and has no stored state", id)
	}
	for _, s := range ended {
		if heard := m.heardLocked(s); !heard.IsZero() && s.endedAt.IsZero() {
			// Its record ends when the node was last heard of playing it
			// (as an orphan's after restore_grace), not at the forget,
			// which may come hours after the node died.
			s.endedAt = later(heard, s.StartedAt)
		}
		m.endLocked(s, "node forgotten by the operator")
		s.forget = m.lead != nil // on a shared store, only this manager's entries
	}
	if len(ended) > 0 {
		// A node that was cut off rather than dead may come back playing
		// them, their reservations gone: it is told to end them then.
		ids := m.forgotEnded[id]
		for _, s := range ended {
			ids = append(ids, s.ID)
		}
		m.forgotEnded[id] = ids
	}
	commands, fills, holds, err := m.dropNodeLocked(id, now)
	deadline, _ := ctx.Deadline() // every store call of the forget within it
	if err != nil {
		unlock()
		m.persistAllBy(ended, deadline)
		return nil, status.Errorf(codes.Internal, "node %s not forgotten: %v", id, err)
	}
	delete(m.nodeSettings, id)
	delete(m.knownTransports, id)
	for _, t := range m.pins.NodePins(id) {
		m.pins.Unpin(id, t)
	}
	pins, perr := json.Marshal(m.pins)
	unlock()
	m.log.Info("node forgotten by operator", "node", id, "registered", n != nil, "sessions_ended", len(ended),
		"unpinned", len(unpinned), "commands_dropped", commands)

	out.Registered = n != nil
	out.SessionsEnded = int32(len(ended))
	out.UnpinnedTitles = unpinned
	out.SettingRemoved = setHere || setStored
	out.HoldsRemoved = int32(max(holds, storedHolds))
	out.CommandsDropped = int32(commands)
	out.FillsDropped = int32(fills)

	// The store, each call within ctx's deadline (a write Redis runs
	// after it is not applied: store.Redis.PutState): the sessions'
	// entries, then the node's setting, holds and pins, then the forget
	// for a standby.
	deletesLeft := m.persistAllBy(ended, deadline) // those left are retried when the store answers (retryLater)
	var failed []forgetLeft
	note := func(what string, err error) {
		if err != nil {
			m.log.Error("store: forgotten node's state not removed", "node", id, "state", what, "err", err)
			failed = append(failed, forgetLeft{what, m.adminStoreMsg(ctx, err)})
		}
	}
	if setStored {
		delete(st.settings, id)
		err := m.putStateJSON(ctx, stateNodeSettings, st.settings)
		if err == nil {
			m.noteStored(st.settings, nil)
		}
		note("its operator setting", err)
	}
	if storedHolds > 0 {
		note("its eviction holds", m.putStateJSON(ctx, stateEvictHolds,
			slices.DeleteFunc(st.holds, func(h smm.Hold) bool { return h.Node == id || !now.Before(h.Until) })))
	}
	if len(unpinned) > 0 {
		if perr == nil {
			perr = m.st.PutState(ctx, statePins, pins)
		}
		note("its pins", perr)
	}
	if transport {
		note("its transport", m.writeTransport(ctx, id, nil))
	}
	note("its eviction orders", m.dropNodeEvictOrdersOpLocked(ctx, id))
	if read, err := m.dropNodePrefetchOrdersOpLocked(ctx, id); read {
		note("its prefetch orders", err)
	} else {
		// Not read with the rest (readStoredNodeState): there may be none.
		note("its prefetch orders if any", err)
	}
	m.mu.Lock()
	delete(m.restoring, id)
	for k := range m.handOrders {
		if k[0] == id {
			delete(m.handOrders, k)
		}
	}
	m.mu.Unlock()
	var recErr error // the record of the forget: written, not removed
	if m.lead != nil {
		if recErr = m.saveForgotten(ctx, id, now); recErr != nil {
			m.log.Error("store: forget of the node not recorded for the standby", "node", id, "err", recErr)
		}
	}
	// The stored plan without the node, now rather than at the next
	// PopularitySave: a manager starting or taking over after a crash
	// meanwhile would hold its first plan for the node (armPlanWait).
	// Failed, it is logged, and the next save mends it.
	by := time.Now().Add(stateWriteWait)
	if !deadline.IsZero() && deadline.Before(by) {
		by = deadline
	}
	m.savePopularity(by)
	m.kickPump()
	m.unwaitNode(id)
	m.kickPlan() // the plan drops the node now
	out.Message = forgetSummary(out)
	deletes := ""
	if deletesLeft > 0 {
		deletes = fmt.Sprintf("; %s deleted from the store when it answers again",
			counted(deletesLeft, "session entry is", "session entries are"))
		out.Message += deletes
	}
	if len(failed) > 0 || recErr != nil {
		return nil, pb.NotSaved(m.forgetNotSavedMsg(ctx, id, failed, recErr) + deletes)
	}
	return out, nil
}

// forgetNotSavedMsg is the message of a forget of node id made in this
// manager whose store work failed: the parts of its stored state left
// (failed) and, on a shared store, the error of the forget's record for
// the standby (recErr, nil when written), each with what it leads to
// until the forget is made again: on a store of its own only a restart
// applies what is left.
func (m *Manager) forgetNotSavedMsg(ctx context.Context, id string, failed []forgetLeft, recErr error) string {
	var but, until []string
	if len(failed) > 0 {
		but = append(but, "not removed from the store: "+forgetLeftList(failed))
		if m.lead != nil {
			until = append(until, "a manager restart or a takeover applies what is left to a node registering under the id")
		} else {
			until = append(until, "a manager restart applies what is left to a node registering under the id")
		}
	}
	if recErr != nil {
		but = append(but, "the record of the forget for the standby not written ("+m.adminStoreMsg(ctx, recErr)+")")
		until = append(until, "the standby, taking over, still lists the node")
	}
	return fmt.Sprintf("node %s forgotten in this manager, but %s; run vodctl node forget %s again when the store answers (until then %s)",
		id, strings.Join(but, "; "), id, strings.Join(until, ", and "))
}

// forgetLeft is a part of a forgotten node's stored state whose removal
// failed (what), and why (an operator's message: adminStoreMsg).
type forgetLeft struct{ what, why string }

// forgetLeftList names the parts left in the store, each run of parts
// left for the same reason followed by it once ("its operator setting,
// its pins (the store (Redis) did not answer within 5s: try again)").
func forgetLeftList(left []forgetLeft) string {
	var b strings.Builder
	for i, l := range left {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l.what)
		if i == len(left)-1 || left[i+1].why != l.why {
			fmt.Fprintf(&b, " (%s)", l.why)
		}
	}
	return b.String()
}

// forgetSummary says in one line what forgetting a node removed.
func forgetSummary(r *pb.ForgetNodeResponse) string {
	parts := []string{"forgotten"}
	if !r.GetRegistered() {
		parts[0] = "not registered; its stored state removed"
	}
	if k := r.GetSessionsEnded(); k > 0 {
		parts = append(parts, counted(int(k), "session", "sessions")+" left on it ended")
	}
	if r.GetSettingRemoved() {
		parts = append(parts, "its operator setting (drain, weight, overload) removed")
	}
	if k := r.GetHoldsRemoved(); k > 0 {
		parts = append(parts, counted(int(k), "eviction hold", "eviction holds")+" removed")
	}
	if k := r.GetCommandsDropped(); k > 0 {
		parts = append(parts, counted(int(k), "command", "commands")+" queued for its return dropped")
	}
	if k := r.GetFillsDropped(); k > 0 {
		parts = append(parts, counted(int(k), "prefetch", "prefetches")+" on it dropped")
	}
	if ts := r.GetUnpinnedTitles(); len(ts) > 0 {
		parts = append(parts, fmt.Sprintf("unpinned %s (pin them elsewhere: vodctl pin TITLE NODE)", strings.Join(ts, ", ")))
	}
	return strings.Join(parts, "; ")
}

// counted is k followed by the noun, singular for 1 ("1 command",
// "2 commands").
func counted(k int, one, many string) string {
	if k == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", k, many)
}

// storedNodeState is the stored operator state keyed by node.
type storedNodeState struct {
	settings map[string]nodeSetting
	holds    []smm.Hold
	pins     *smm.Pins
}

// readStoredNodeState reads the stored node settings, eviction holds and
// pins (opMu and pinsMu held). A malformed value is an error: writing
// over it would lose the other nodes' entries.
func (m *Manager) readStoredNodeState(ctx context.Context) (storedNodeState, error) {
	var st storedNodeState
	var err error
	if st.settings, err = m.readNodeSettings(ctx, true); err != nil {
		return st, err
	}
	if st.holds, err = m.readHolds(ctx, true); err != nil {
		return st, err
	}
	st.pins, err = readStateJSON(m, ctx, statePins, "pins", true, func() *smm.Pins { return &smm.Pins{} })
	return st, err
}

// putStateJSON stores v as JSON under name.
func (m *Manager) putStateJSON(ctx context.Context, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return m.st.PutState(ctx, name, b)
}

// dropNodeLocked removes node id from this manager's memory (planMu and mu
// held): the scheduler (lsm.Scheduler.RemoveNode: it must be dead, its
// sessions' reservations released), its nodeState with the commands
// queued for it (returned: how many) and its heartbeat stream (a report
// still arriving on it is refused, and the node registers again), and the
// storage manager's state of it (returned: prefetches and holds dropped).
// Sessions naming the node are the caller's.
func (m *Manager) dropNodeLocked(id string, now time.Time) (commands, fills, holds int, err error) {
	if m.sched.Node(id) != nil {
		if err := m.sched.RemoveNode(id); err != nil {
			return 0, 0, 0, err
		}
	}
	if ns := m.nodes[id]; ns != nil {
		commands = len(ns.queue)
		if ns.pins != nil {
			commands++ // its pins, due
		}
		if ns.drain != nil {
			commands++ // its drain state, due
		}
		ns.queue, ns.pins, ns.drain = nil, nil, nil
		ns.streamGen++ // its stream's reports are refused (ABORTED) from now
		ns.stopStream()
		ns.wakeReportWaiters()
		delete(m.nodes, id)
	}
	fills, holds = m.storage.ForgetNode(id, now)
	if m.rep != nil && m.rep != m.storage.Replicator {
		f, h := m.rep.ForgetNode(id, now)
		fills, holds = fills+f, holds+h
	}
	return commands, fills, holds, nil
}

// readForgotten returns the stored forgets (node id -> when); a malformed
// value is logged and dropped.
func (m *Manager) readForgotten(ctx context.Context) (map[string]int64, error) {
	return readStateJSON(m, ctx, stateForgotten, "forgotten nodes", false, func() map[string]int64 { return map[string]int64{} })
}

// saveForgotten records in the store that node id was forgotten at now,
// dropping the records older than forgottenKeep (opMu held).
func (m *Manager) saveForgotten(ctx context.Context, id string, now time.Time) error {
	list, err := m.readForgotten(ctx)
	if err != nil {
		return err
	}
	for k, ms := range list {
		if now.Sub(time.UnixMilli(ms)) > forgottenKeep {
			delete(list, k)
		}
	}
	list[id] = now.UnixMilli()
	return m.putStateJSON(ctx, stateForgotten, list)
}

// dropForgotten, when this manager takes over on a shared store, forgets
// the nodes an operator forgot on the active manager that this one still
// knows from before (it served them once): dead here and last heard of
// before the forget. Only its memory changes (the forget cleaned the
// store); sessions naming such a node stay, without reservation, for a
// node registering under the id (as after a restart), and end after
// RestoreGrace otherwise.
func (m *Manager) dropForgotten(ctx context.Context) {
	list, err := m.readForgotten(ctx)
	if err != nil {
		m.log.Error("taking over: forgotten nodes not read; forget them here if listed (vodctl node forget)", "err", err)
		return
	}
	if len(list) == 0 {
		return
	}
	now := m.now()
	unlock := m.lockBetweenPlans()
	defer unlock()
	for id, ms := range list {
		n := m.sched.Node(id)
		if n == nil || n.Alive || !n.LastHeartbeat.Before(time.UnixMilli(ms)) {
			continue
		}
		if _, _, _, err := m.dropNodeLocked(id, now); err != nil {
			m.log.Error("taking over: node forgotten on the active manager not forgotten here", "node", id, "err", err)
			continue
		}
		m.log.Info("taking over: node forgotten on the active manager, forgotten here too", "node", id)
	}
}
