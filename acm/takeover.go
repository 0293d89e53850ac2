package acm

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// takeOver makes a standby the active manager when it takes the planner
// lock: the nodes an operator forgot on the previous leader are forgotten
// here too (dropForgotten), the sessions in the store that are not in the
// table are loaded (those of registered nodes get their reservations at
// once, the others when their node registers, or end RestoreGrace from
// now), the catalog is read from the origin (3 s at most), and the
// operator's pins and the popularity snapshot the previous leader saved
// replace this manager's; then it plans (once the nodes of
// the restored plan registered: armPlanWait). The operator's
// changes the store did not take (a policy, a node setting answered
// CHANGE_NOT_SAVED) are kept and saved when no other manager held the
// lock since this one did (leader.kept: it retook it after the store's
// outage), else the stored ones replace them (loadOpState).
func (m *Manager) takeOver() {
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	m.dropForgotten(ctx)
	loaded, err := m.loadSessions(ctx, "")
	if err != nil {
		m.log.Error("taking over: sessions not loaded; they load when their nodes register", "err", err)
	}
	m.mu.Lock()
	m.startedAt, m.tookOver = m.now(), true // RestoreGrace counts from now
	m.mu.Unlock()
	if m.origin != nil {
		// The catalog as the origin serves it now, as at Start: the
		// hints the previous leader's snapshot records as applied are
		// compared with it (applyHints), not with this manager's last
		// read, up to a CatalogRefresh older (a hint changed since would
		// be taken as changed back, and applied again).
		if err := m.refreshCatalog(ctx, 3*time.Second); err != nil {
			m.log.Warn("taking over: catalog not read from the origin; the last one read serves", withOriginHint(err, "origin", m.OriginAddr, "err", err)...)
		}
	}
	if err := m.reloadStorage(ctx, m.lead.kept.Load()); err != nil {
		m.log.Error("taking over: pins and popularity not reloaded", "err", err)
	}
	if err := m.loadTransports(ctx); err != nil {
		m.log.Error("taking over: the nodes' transports not reloaded", "err", err)
	}
	m.log.Info("active: took over planning", "sessions_loaded", loaded)
	m.armPlanWait(m.now())
	m.lead.taking.Store(false) // Leader from now, before the plan it asks for
	m.kickPlan()
}

// loadSessions adds to the table the stored sessions, of node only unless
// node is "", that it does not hold (written by another manager sharing
// the store), as restored sessions; those whose node is registered and
// alive (draining or not) get their reservation at once, the others when
// it registers (Register). A session whose reservation cannot be rebuilt
// ends. For a node, a session of it the table holds whose entry names
// another manager takes that manager's name, which Register claims back;
// one whose entry names the manager it names takes that entry's Digest
// (a claim is made over the entry as last read). Taking over (node ""),
// the live sessions of the table that the store lacks (its node
// registered here and alive, so reporting them) are written again: a
// Redis that restarted without its data (no AOF) holds none of them, and
// the other manager, taking over later, would not know them.
// An entry that does not decode is skipped (logSkipped), one of a session
// whose admission this manager undid (undoLocked), or that it ended as a
// no-show (noShowLocked), is deleted. The sessions it
// adds, and those of the table without a reservation, take what the
// stored progress knew of them (applyProgressLocked), read when it may
// add one (addsLive). It returns how many it added.
func (m *Manager) loadSessions(ctx context.Context, node string) (int, error) {
	ss, skipped, err := m.st.Sessions(ctx)
	if err != nil {
		return 0, err
	}
	m.logSkipped(skipped)
	var progress map[string]sessionProgress
	if m.addsLive(ss, node) {
		progress = m.loadProgress(ctx)
	}
	var changed []*session
	var ghosts []ghost
	n := 0
	stored := make(map[string]bool, len(ss))
	m.mu.Lock()
	for _, st := range ss {
		stored[st.ID] = true
		if st.State == store.StateEnded || (node != "" && st.Node != node) {
			continue
		}
		if m.sessions[st.ID] == nil && m.undoneLocked(st) {
			ghosts = append(ghosts, ghost{st: st}) // written when the store resumed: deleted, not loaded
			continue
		}
		if m.sessions[st.ID] == nil && m.noShownLocked(st) {
			ghosts = append(ghosts, ghost{st: st, noShow: true}) // its delete waits for the store: deleted, not loaded
			continue
		}
		if cur := m.sessions[st.ID]; cur != nil {
			if p, ok := progress[st.ID]; ok && !cur.reserved {
				// An orphan here (its node registered here, died, and
				// went back to the manager before this one, which heard
				// it since): what that one knew is later.
				applyProgressLocked(cur, p)
			}
			if node == "" && !cur.ended && cur.Manager != st.Manager {
				// Taking over a session of the table whose entry names
				// another manager (which claimed it at its own takeover,
				// and gave the lock back since): claimed back, as the
				// sessions loaded here are, so that its end here deletes
				// the entry (deleteOwn) and a write made late writes it
				// (putOwn).
				cur.Manager, cur.Digest = st.Manager, st.Digest
				if m.claimLocked(cur) {
					changed = append(changed, cur)
				}
				continue
			}
			if node != "" && cur.Manager != st.Manager {
				// Its node was with the manager the entry names
				// meanwhile, which took it over: Register claims it back
				// (the entry left naming that manager, its delete there
				// of the session as an orphan removed the live one's).
				cur.Manager = st.Manager
			}
			if cur.Manager == st.Manager {
				// The entry as read now: a claim of it (claimLocked) is
				// made over this one, not one read before it (at the
				// start, an earlier load) that its manager rewrote since.
				cur.Digest = st.Digest
			}
			continue
		}
		s := &session{Session: st, restored: true, orphaned: m.now()} // RestoreGrace from now
		if p, ok := progress[st.ID]; ok {
			applyProgressLocked(s, p)
		}
		m.addSessionLocked(s)
		n++
		if node != "" {
			continue // Register reserves it
		}
		// Taking over: this manager holds every session in the store now,
		// also those whose node has not registered here yet.
		if m.claimLocked(s) {
			changed = append(changed, s)
		}
		if sn := m.sched.Node(st.Node); sn != nil && m.nodes[st.Node] != nil && sn.Alive {
			res, err := m.sched.Reserve(st.Node, st.Title, st.BitrateBps)
			if err != nil {
				m.endLocked(s, "reservation not rebuilt: "+err.Error())
				changed = append(changed, s)
				continue
			}
			s.res, s.reserved, s.restored, s.orphaned = res, true, false, time.Time{}
		}
	}
	missing := 0
	if node == "" {
		for id, s := range m.sessions {
			if stored[id] || !s.reserved || s.ended {
				continue
			}
			m.claimLocked(s)
			s.rewrite = true
			changed = append(changed, s)
			missing++
		}
	}
	m.mu.Unlock()
	m.deleteUndone(ctx, ghosts)
	if missing > 0 {
		m.log.Warn("taking over: live sessions missing from the store written again (did Redis restart without its data? run it with appendonly yes: deploy/README.md, Shared state)", "sessions", missing)
	}
	m.persistAll(changed)
	if n > 0 {
		m.log.Info("sessions loaded from the shared store", "node", node, "sessions", n)
	}
	return n, nil
}

// addsLive reports whether loadSessions(node) may add a live session of
// ss to the table that the stored progress, another manager's, tells of:
// at a takeover (node ""), or, on a manager that does not lead, when a
// session of node is not in the table (the node registers here after
// the active manager died, or moved to this one: it may come back without
// the session, which then ends when that manager last heard of it,
// restartEnd). The active manager's progress is its own: it tells of no
// session its table lacks.
func (m *Manager) addsLive(ss []store.Session, node string) bool {
	if node == "" {
		return true
	}
	if m.Leader() {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range ss {
		if st.Node == node && st.State != store.StateEnded && m.sessions[st.ID] == nil {
			return true
		}
	}
	return false
}

// reloadStorage replaces the pins and the popularity with the stored ones
// (another manager's, on a shared store), tells the nodes their pins,
// applies the catalog's hints the snapshot does not record as applied
// (applyHints), adds the stored known logins
// (loadKnownLogins); the operator's settings as
// loadOpState with keep. With keep (this manager retook its own lock, no
// other manager held it since: leader.kept) the popularity stays this
// manager's: the stored snapshot is its own, up to a save interval
// older, and after the store lost its data there is none, and the hints
// it applied are not applied again.
func (m *Manager) reloadStorage(ctx context.Context, keep bool) error {
	m.pinsMu.Lock()
	defer m.pinsMu.Unlock()
	pins, err := m.st.State(ctx, statePins)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var pop []byte
	if m.rep != nil && !keep {
		if pop, err = m.st.State(ctx, statePopularity); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	m.mu.Lock()
	if pins != nil {
		if err := m.pins.UnmarshalJSON(pins); err != nil {
			m.log.Error("stored pins malformed: keeping this manager's", "err", err)
		}
	}
	if !keep {
		m.seeded = map[string]float64{} // the hints the snapshot applied, if any
		if pop != nil {
			m.restorePopularity(pop)
		}
	}
	for _, ns := range m.nodes {
		m.sendProtectLocked(ns, false)
	}
	m.syncPinnedLocked("")
	m.mu.Unlock()
	m.applyHints()
	err = m.loadOpState(ctx, keep)
	m.loadKnownLogins(ctx)
	return err
}

// registerHook runs before NodeControl.Register on a shared store: the
// node's sessions another manager admitted are loaded into the table, so
// that Register rebuilds their reservations (a node registers here when
// the front door's address moved to this manager), its operator setting
// is read again, and on a standby the pins too (reloadPins), which the
// registration tells the node, and the suspensions (reloadSuspensions).
// UNAVAILABLE when the store does not answer: the node retries, rather
// than joining without its sessions' reservations.
func (m *Manager) registerHook(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if m.lead == nil || info.FullMethod != pb.NodeControl_Register_FullMethodName {
		return h(ctx, req)
	}
	r, ok := req.(*pb.RegisterRequest)
	if !ok || !idPattern.MatchString(r.GetNodeId()) {
		return h(ctx, req) // Register answers INVALID_ARGUMENT
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := m.loadSessions(lctx, r.GetNodeId()); err != nil {
		return nil, status.Errorf(codes.Unavailable, "node %s: its sessions not loaded (%s)", r.GetNodeId(), storeMsg(err))
	}
	if err := m.reloadNodeSetting(lctx, r.GetNodeId()); err != nil {
		return nil, status.Errorf(codes.Unavailable, "node %s: its operator setting not loaded (%s)", r.GetNodeId(), storeMsg(err))
	}
	if !m.Leader() {
		// The registration tells the node its pins, none included, and
		// the node protects that set alone: a standby's are those it
		// loaded at its start, or at a registration since.
		if err := m.reloadPins(lctx); err != nil {
			return nil, status.Errorf(codes.Unavailable, "node %s: the pins not loaded (%s)", r.GetNodeId(), storeMsg(err))
		}
		// Its front door admits the node's viewers from now on: with
		// the suspensions of the active manager, not of its start.
		if err := m.reloadSuspensions(lctx); err != nil {
			return nil, status.Errorf(codes.Unavailable, "node %s: the suspensions not loaded (%s)", r.GetNodeId(), storeMsg(err))
		}
	}
	return h(ctx, req)
}

// reloadPins replaces the pins with the stored ones (the active manager's,
// on a shared store) and tells the nodes registered here theirs when they
// changed: on a standby, before a node's registration tells it its pins.
// Errors: the store fails. With none stored, or stored pins that do not
// decode (logged), this manager's are kept.
func (m *Manager) reloadPins(ctx context.Context) error {
	m.pinsMu.Lock()
	defer m.pinsMu.Unlock()
	b, err := m.st.State(ctx, statePins)
	if errors.Is(err, store.ErrNotFound) {
		return nil // none ever stored: this manager's stand
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.pins.UnmarshalJSON(b); err != nil {
		m.log.Error("stored pins malformed: keeping this manager's", "err", err)
		return nil
	}
	for _, ns := range m.nodes {
		m.sendProtectLocked(ns, false)
	}
	m.syncPinnedLocked("")
	return nil
}
