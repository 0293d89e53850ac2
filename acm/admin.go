package acm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
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

// admin implements pb.AdminServer: the catalog, nodes, sessions and
// policies here; placement, prefetch, eviction, pins and fills in
// admin_storage.go.
type admin struct {
	pb.UnimplementedAdminServer
	m *Manager
}

// ListTitles returns the catalog in id order, whole or the page req asks
// for (pb.TitlePage), with whether the manager has a catalog at all and
// when it last read it from the origin (so that no title can be told from
// no catalog); INVALID_ARGUMENT for a negative page_size.
func (a *admin) ListTitles(_ context.Context, req *pb.ListTitlesRequest) (*pb.ListTitlesResponse, error) {
	// has and the titles before readMs, which readCatalog stores before
	// the catalog it read and catalogLoaded: a catalog read from the
	// origin comes with its read time, never with 0 (with no title and
	// has_catalog, 0 is a manager with no origin).
	has := !a.m.noCatalog()
	ts := a.m.sortedTitles()
	readMs := a.m.health.catalogReadMs.Load()
	start, end, next, err := pb.TitlePage(len(ts), func(i int) string { return ts[i].ID }, req)
	if err != nil {
		return nil, err
	}
	out := &pb.ListTitlesResponse{Titles: make([]*pb.Title, 0, end-start), NextPageToken: next,
		HasCatalog: &has, CatalogReadUnixMs: &readMs}
	for _, t := range ts[start:end] {
		out.Titles = append(out.Titles, titleProto(t))
	}
	return out, nil
}

// refreshTimeout bounds an operator's read of the origin's catalog
// (RefreshCatalog), whose caller's deadline (vodctl --timeout, 10 s) is
// usually the shorter: longer than the manager's own reads (10 s), as the
// origin first loads the change it finds in its title directory, scanning
// each new or changed file.
const refreshTimeout = time.Minute

// RefreshCatalog reads the origin's catalog now (Admin.RefreshCatalog),
// having the origin look at its title directory first and load a change
// found there (readCatalog with check), and answers how the manager's
// catalog changed, with the origin's refusal of its directory's last
// change, if any (origin_catalog_refused), and whether it looked
// (origin_checked_directory: false from an origin that predates
// check_directory), and whether its directory kept changing while it
// looked, its change not loaded (origin_directory_changing). FAILED_PRECONDITION on a
// manager with no origin (OriginAddr empty: its catalog is the stored one
// only); UNAVAILABLE when the origin cannot be read (the catalog before
// stays in use), or when the catalog was read but could not be written to
// the store (it is served).
func (a *admin) RefreshCatalog(ctx context.Context, _ *pb.RefreshCatalogRequest) (*pb.RefreshCatalogResponse, error) {
	if a.m.origin == nil {
		return nil, status.Error(codes.FailedPrecondition, "this manager has no origin (manager.origin not set): its catalog is only the one its store holds, never read or refreshed; set origin in its configuration and restart it")
	}
	c, err := a.m.readCatalog(ctx, refreshTimeout, true)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "catalog not read from the origin %s: %v", a.m.OriginAddr, err)
	}
	return &pb.RefreshCatalogResponse{Titles: int32(len(a.m.titles())), Published: c.published, Withdrawn: c.withdrawn, Replaced: c.replaced,
		OriginCatalogRefused: c.originRefused, OriginCheckedDirectory: &c.originChecked, OriginDirectoryChanging: c.originChanging}, nil
}

// diskFreeShown is node n's free disk as vodctl nodes and the metrics show
// it, bytes (-1: unknown): as the node last gave it, not less the fills
// booked since (mu held).
func (m *Manager) diskFreeShown(n *lsm.Node) int64 {
	if ns := m.nodes[n.ID]; ns != nil && ns.reported {
		return ns.shownFree
	}
	return n.DiskFreeBytes
}

// orphanedSession reports whether session s waits restore_grace for its
// node without a reservation (its node dead, or not registered since this
// manager started or took over): ListSessions lists it orphaned.
func orphanedSession(s *session) bool {
	return s.restored && !s.reserved
}

// orphanedLocked counts the orphaned sessions (orphanedSession) of each
// node, by node id (mu held).
func (m *Manager) orphanedLocked() map[string]int32 {
	out := map[string]int32{}
	for _, s := range m.sessions {
		if orphanedSession(s) {
			out[s.Node]++
		}
	}
	return out
}

// nodeInfoLocked describes node n, with its orphaned sessions as orphans
// counts them (orphanedLocked) (mu held).
func (m *Manager) nodeInfoLocked(n *lsm.Node, orphans map[string]int32) *pb.NodeInfo {
	egress := n.EgressBps
	if !n.Alive {
		egress = 0 // its last report's egress is not what it sends now
	}
	var partials int
	var partialBytes int64
	if ns := m.nodes[n.ID]; ns != nil {
		partials, partialBytes = ns.partialBytes()
	}
	return &pb.NodeInfo{
		NodeId: n.ID, RtspAddr: n.RTSPAddr, HttpAddr: n.HTTPAddr,
		Capacity: &pb.NodeCapacity{EgressBps: n.Capacity.EgressBps, MaxSessions: int32(n.Capacity.MaxSessions), DiskBytes: n.Capacity.DiskBytes},
		Alive:    n.Alive, Draining: n.Draining, Weight: int32(n.Weight),
		Sessions: int32(n.Sessions), FillSessions: int32(n.FillSessions), ReservedBps: n.ReservedBps,
		EgressBps: egress, DiskFreeBytes: m.diskFreeShown(n), Load: m.sched.Load(n.Index),
		Titles: int32(n.Titles()), LastHeartbeatUnixMs: n.LastHeartbeat.UnixMilli(), Overload: n.Overload,
		Partials: int32(partials), PartialBytes: partialBytes, Site: n.Site, NoOrigin: n.NoOrigin,
		TcpOnly: tcpOnly(n), OrphanedSessions: orphans[n.ID],
	}
}

// ListNodes returns every node registered with this manager and not
// forgotten since (ForgetNode), dead ones included, in id order, with its
// load (lsm.Load), reservations, liveness, and the partial fills its last
// report listed with their bytes; and the nodes known from the store that
// have not registered since it started (not_registered).
func (a *admin) ListNodes(context.Context, *pb.ListNodesRequest) (*pb.ListNodesResponse, error) {
	m := a.m
	m.mu.Lock()
	out := &pb.ListNodesResponse{Standby: m.standby(), NotRegistered: m.notRegisteredLocked()}
	orphans := m.orphanedLocked()
	for _, n := range m.sched.Nodes {
		out.Nodes = append(out.Nodes, m.nodeInfoLocked(n, orphans))
	}
	m.mu.Unlock()
	sort.Slice(out.Nodes, func(i, j int) bool { return nodeIDLess(out.Nodes[i].NodeId, out.Nodes[j].NodeId) })
	return out, nil
}

// SetNode changes a node's weight, overload threshold and/or drain flag at
// run time; a drain change is also sent to the node (DrainCommand). The
// change is kept in the store: a restarted manager, or the standby taking
// over, applies it again when the node registers (an undrain back to no
// setting at all removes the entry). A node not registered since this
// manager started but with a stored setting can be changed too (applied
// when it registers); the answer for it is that stored setting
// (weight_stored: whether a weight is stored, a stored 0 included).
// Each answer has standby set on a manager without the planner lock.
// NOT_FOUND for a node neither registered nor with a stored setting,
// INVALID_ARGUMENT for a weight out of 0..lsm.MaxWeight or an overload
// threshold out of [the scheduler's normal limit, 1] (0 = none:
// checkOverload), UNAVAILABLE when the store fails: the change then
// holds in this manager only (until it restarts; on a shared store also
// until a takeover or the node's next registration, which read the
// stored setting), and the message says which (the answer carries
// pb.ReasonNotSaved, pb.IsNotSaved; UNAVAILABLE without it changed
// nothing). On a standby, a node not registered with it is
// FAILED_PRECONDITION (notLeader): the change would wait for a takeover.
//
// A request with no change (no weight, drain flag or overload threshold)
// changes nothing: it shows the node (showNode), on a standby too; `vodctl
// node NODE` asks it for a node ListNodes does not list, to show the
// node's stored setting.
func (a *admin) SetNode(ctx context.Context, req *pb.SetNodeRequest) (*pb.NodeInfo, error) {
	m := a.m
	if w := req.GetWeight(); req.Weight != nil && (w < 0 || w > lsm.MaxWeight) {
		return nil, status.Errorf(codes.InvalidArgument, "weight %d out of 0..%d (IPVS's range; 0 = no new sessions, %d = as announced)", w, lsm.MaxWeight, lsm.DefaultWeight)
	}
	if req.Overload != nil {
		if why := a.m.checkOverload(req.GetOverload()); why != "" {
			return nil, status.Error(codes.InvalidArgument, why)
		}
	}
	id := req.GetNodeId()
	if !idPattern.MatchString(id) {
		return nil, status.Errorf(codes.InvalidArgument, "node id %q: want 1-128 of [A-Za-z0-9._-]", clip(id))
	}
	if req.Weight == nil && req.Draining == nil && req.Overload == nil {
		info, err := m.showNode(ctx, id)
		if info != nil {
			info.Standby = m.standby()
		}
		return info, err
	}
	// opMu through the change and its write: a registration's reload of
	// the stored setting cannot come in between.
	ctx, cancel := context.WithTimeout(context.Background(), adminStoreWait) // the lock's wait and the store's
	defer cancel()
	if err := m.adminLock(ctx, &m.opMu, "node "+id+" not changed"); err != nil {
		return nil, err
	}
	defer m.opMu.Unlock()
	m.mu.Lock()
	_, known := m.nodeSettings[id]
	registered := m.sched.Node(id) != nil
	servedHere := m.registeredLocked(id)
	m.mu.Unlock()
	if !servedHere && !m.Leader() {
		// Stored, it would reach the node only at the next takeover,
		// replacing whatever the active manager set meanwhile.
		return nil, m.notLeader("change the node on the active manager, or on the manager it is registered with")
	}
	if !registered && !known {
		stored, err := m.readNodeSettings(ctx, false)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "node %q is not registered here and its stored setting cannot be read (%s)", id, m.adminStoreMsg(ctx, err))
		}
		if _, ok := stored[id]; !ok {
			return nil, status.Errorf(codes.NotFound, "node %q is not registered and has no stored setting%s", id, m.standbyHint())
		}
	}
	st, _, err := m.changeNodeSettingOpLocked(ctx, id, func(st *nodeSetting) {
		if req.Weight != nil {
			w := int(req.GetWeight())
			st.Weight = &w
		}
		if req.Overload != nil {
			st.Overload = req.GetOverload()
		}
		if req.Draining != nil {
			st.Draining = req.GetDraining()
		}
	})
	m.mu.Lock()
	if st.isZero() {
		delete(m.nodeSettings, id)
	} else {
		m.nodeSettings[id] = st
	}
	var info *pb.NodeInfo
	n := m.sched.Node(id)
	if n != nil {
		m.applyNodeSettingLocked(id, false) // and tells the node when its drain changes
		m.log.Info("node changed by operator", "node", id, "weight", n.Weight, "draining", n.Draining, "overload", n.Overload)
		info = m.nodeInfoLocked(n, m.orphanedLocked())
	} else {
		m.log.Info("setting of an absent node changed by operator: applied when it registers", "node", id, "draining", st.Draining)
		info = storedNodeInfo(id, st)
	}
	m.mu.Unlock()
	m.kickPump()
	if n != nil {
		// A node back in service (or out of it) is planned for now:
		// titles pinned to it, and the operator's prefetches queued
		// there, waited for the next periodic plan.
		m.kickPlan()
	}
	if err != nil {
		m.log.Error("store: node setting not saved", "node", id, "err", err)
		if m.unsavedNodes == nil {
			m.unsavedNodes = map[string]bool{}
		}
		m.unsavedNodes[id] = true
		// On a store of its own the manager keeps the setting for the
		// node's registrations; on a shared one each registration reads
		// the stored setting (registerHook), as a takeover by another
		// manager does; this manager's own retake of the planner lock
		// saves it (loadOpState).
		lost := "this manager keeps it until it restarts"
		if m.lead != nil {
			lost = "a manager restart, a takeover by another manager or the node's next registration forgets it (each reads the stored setting); " + retakeSaves
		}
		return nil, pb.NotSaved(fmt.Sprintf("node %s changed in this manager, but not saved (%s): %s", id, m.adminStoreMsg(ctx, err), lost))
	}
	delete(m.unsavedNodes, id)
	info.Standby = m.standby()
	return info, nil
}

// storedNodeInfo is the answer of SetNode for node id not registered:
// its stored setting st, no address.
func storedNodeInfo(id string, st nodeSetting) *pb.NodeInfo {
	info := &pb.NodeInfo{NodeId: id, Draining: st.Draining, Overload: st.Overload}
	if st.Weight != nil { // a stored 0 told from none (NodeInfo.weight_stored)
		info.Weight, info.WeightStored = int32(*st.Weight), true
	}
	return info
}

// showNode answers a SetNode without a change: node id as ListNodes lists
// it when it is registered, else the setting its registration would apply,
// as SetNode answers for a node not registered (storedNodeInfo): on a
// shared store the stored one, read from the store (another manager may
// have changed it, and a registration reads it again); on a store of its
// own this manager's copy, loaded from the store at its start, which a
// registration applies and which holds a change the store did not take
// ("this manager keeps it until it restarts"). Nothing is written or sent
// to the node, and a standby answers too. NOT_FOUND for a node neither
// registered nor with a setting; UNAVAILABLE when the shared store
// cannot be read.
func (m *Manager) showNode(ctx context.Context, id string) (*pb.NodeInfo, error) {
	m.mu.Lock()
	if n := m.sched.Node(id); n != nil {
		info := m.nodeInfoLocked(n, m.orphanedLocked())
		m.mu.Unlock()
		return info, nil
	}
	if m.lead == nil {
		st, ok := m.nodeSettings[id]
		m.mu.Unlock()
		if !ok {
			return nil, status.Errorf(codes.NotFound, "node %q is not registered and has no stored setting%s", id, m.standbyHint())
		}
		return storedNodeInfo(id, st), nil
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, adminStoreWait)
	defer cancel()
	stored, err := m.readNodeSettings(ctx, false)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "node %q is not registered here and its stored setting cannot be read (%s)", id, m.adminStoreMsg(ctx, err))
	}
	st, ok := stored[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "node %q is not registered and has no stored setting%s", id, m.standbyHint())
	}
	return storedNodeInfo(id, st), nil
}

// ListSessions returns the live sessions (admitted and playing), by
// admission time, of one node or of all, of one subscriber or of all; a
// playing session its node reports paused or finished is listed so
// (listedState). A subscriber named with no session whom the users file
// does not know is marked user_unknown.
// NOT_FOUND for a node the manager does not know (neither registered
// since it started nor holding sessions).
func (a *admin) ListSessions(ctx context.Context, req *pb.ListSessionsRequest) (*pb.ListSessionsResponse, error) {
	m := a.m
	m.mu.Lock()
	var ss []store.Session
	idle := map[string]int64{} // session -> seconds idle, as its node last reported
	now := m.now()
	for _, s := range m.sessions {
		if (req.GetNodeId() == "" || s.Node == req.GetNodeId()) && (req.GetUser() == "" || s.User == req.GetUser()) {
			ss = append(ss, s.Session)
			if ns := m.nodes[s.Node]; ns != nil {
				if since, ok := ns.idle[s.ID]; ok {
					idle[s.ID] = max(int64(now.Sub(since)/time.Second), 1)
				}
				ss[len(ss)-1].State = listedState(ns, s.Session)
			}
			if orphanedSession(s) {
				// No reservation, its node dead or not registered here
				// since this manager started or took over: the session
				// waits restore_grace for the node (tick ends it then);
				// whether its viewer still plays, no one knows.
				ss[len(ss)-1].State = listedOrphaned
			}
		}
	}
	if id := req.GetNodeId(); id != "" && len(ss) == 0 && m.sched.Node(id) == nil && m.nodes[id] == nil {
		m.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "node %q is not known to this manager (vodctl nodes lists them)%s", id, m.standbyHint())
	}
	m.mu.Unlock()
	sort.Slice(ss, func(i, j int) bool {
		if !ss[i].AdmittedAt.Equal(ss[j].AdmittedAt) {
			return ss[i].AdmittedAt.Before(ss[j].AdmittedAt)
		}
		return ss[i].ID < ss[j].ID
	})
	out := &pb.ListSessionsResponse{Sessions: make([]*pb.SessionInfo, 0, len(ss)), Standby: m.standby()}
	if u := req.GetUser(); u != "" && len(ss) == 0 {
		out.UserUnknown = m.userUnknown(ctx, u) // the BOSS asked 2 s at most
	}
	for _, s := range ss {
		si := &pb.SessionInfo{SessionId: s.ID, User: s.User, TitleId: s.Title, NodeId: s.Node, ClientAddr: s.ClientAddr,
			State: s.State, BitrateBps: s.BitrateBps, AdmittedUnixMs: s.AdmittedAt.UnixMilli(), Protocol: s.Protocol, IdleS: idle[s.ID]}
		if !s.StartedAt.IsZero() {
			si.StartedUnixMs = s.StartedAt.UnixMilli()
		}
		out.Sessions = append(out.Sessions, si)
	}
	return out, nil
}

func (m *Manager) policyInfoLocked() *pb.PolicyInfo {
	p := &pb.PolicyInfo{Policy: m.sched.Policy().Name(), Available: lsm.Policies(),
		StoragePolicy: m.storage.Name, StorageAvailable: smm.StoragePolicies(), StoragePlanner: m.plannerName()}
	if m.rep != nil {
		st := m.rep.Stats()
		p.StorageStats = &pb.StorageStats{Plans: int64(st.Plans), Prefetches: int64(st.Prefetches), Evictions: int64(st.Evictions),
			Moves: int64(st.Moves), PlanChanges: int64(st.PlanChanges), FillsDone: int64(st.FillsDone),
			FillsFailed: int64(st.FillsFailed), Retries: int64(st.Retries)}
	}
	return p
}

// GetPolicy returns the scheduling policy, the registered ones, the
// storage policy with its planner and, with the Replicator, what it did
// so far (StorageStats); standby on a manager without the planner lock,
// whose planner does not run (its counts read as a planner that never
// planned).
func (a *admin) GetPolicy(context.Context, *pb.GetPolicyRequest) (*pb.PolicyInfo, error) {
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	p := a.m.policyInfoLocked()
	p.Standby = a.m.standby()
	return p, nil
}

// SetPolicy switches the scheduling policy at run time; reservations and
// sessions stay. Its answer's PreviousPolicy is the policy it replaced,
// read under the lock it changes it with. The choice is kept in the
// store (storedPolicy): a restarted manager or the standby taking over uses it while the
// configured policy is unchanged. FAILED_PRECONDITION on a standby
// manager (set it on the active one); INVALID_ARGUMENT for an unknown
// name, or a storage policy's (saying so: storage.policy is not changed
// at run time); UNAVAILABLE when the store did not take it (in use here all the
// same: the answer carries pb.ReasonNotSaved, pb.IsNotSaved), or does not
// answer so that no manager holds the planner lock (notLeader).
func (a *admin) SetPolicy(_ context.Context, req *pb.SetPolicyRequest) (*pb.PolicyInfo, error) {
	m := a.m
	if !m.Leader() {
		// Stored, it would replace the active manager's policy at the
		// next takeover, unasked.
		return nil, m.notLeader("set the policy on the active manager")
	}
	if name := req.GetPolicy(); len(name) > 64 {
		return nil, status.Errorf(codes.InvalidArgument, "policy %q: no policy has a name that long (%s)", clip(name), validPolicies())
	}
	if name := req.GetPolicy(); slices.Contains(smm.StoragePolicies(), name) {
		return nil, status.Errorf(codes.InvalidArgument, "%q is a storage policy: it is set in the manager's config (storage.policy, %s here) and read at start; vodctl policy NAME switches the scheduling policy only", name, m.storage.Name)
	}
	if name := req.GetPolicy(); !slices.Contains(lsm.Policies(), name) {
		// lsm's own refusal began "lsm: unknown policy", its package
		// shown to the operator, the names as a Go slice.
		return nil, status.Errorf(codes.InvalidArgument, "unknown scheduling policy %q (%s)", name, validPolicies())
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminStoreWait) // the lock's wait and the write
	defer cancel()
	// opMu through the change and its write: a takeover's load cannot come in between.
	if err := m.adminLock(ctx, &m.opMu, "policy not set"); err != nil {
		return nil, err
	}
	defer m.opMu.Unlock()
	m.mu.Lock()
	previous := m.sched.Policy().Name() // read with the change: under the same lock
	if err := m.sched.SetPolicy(req.GetPolicy()); err != nil {
		m.mu.Unlock()
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	m.log.Info("scheduling policy changed by operator", "policy", req.GetPolicy(), "previous", previous)
	info := m.policyInfoLocked()
	info.PreviousPolicy = previous
	m.mu.Unlock()
	m.kickPump()
	if err := m.savePolicy(ctx, req.GetPolicy()); err != nil {
		m.log.Error("store: scheduling policy not saved", "err", err)
		m.unsavedPolicy = true
		// The store keeps what it had: an earlier vodctl policy, or none.
		what, retake := "a manager restart applies", ""
		if m.lead != nil {
			what, retake = "a manager restart, or a takeover by another manager, applies", "; "+retakeSaves
		}
		return nil, pb.NotSaved(fmt.Sprintf("policy %s in use in this manager, but not saved (%s): %s the policy stored before by vodctl policy, if any and still of the same configured policy, else the manager's configured one (%s here)%s", req.GetPolicy(), m.adminStoreMsg(ctx, err), what, m.configuredPolicy, retake))
	}
	m.unsavedPolicy = false
	return info, nil
}

// retakeSaves is what a change not saved on a shared store adds: the
// manager's own retake of its planner lock keeps and saves it
// (settleUnsavedOpLocked), and so does its holding the lock when the
// store answers again (saveUnsavedOp).
const retakeSaves = "should this manager lose its planner lock to the store's outage and retake it with no other manager holding it meanwhile, it keeps the change and saves it then; holding the lock throughout, it saves it once the store takes it"

// notLeader is the answer to an operator's change that only the manager
// holding the planner lock makes, asked of one that does not; todo says
// where to make it. FAILED_PRECONDITION on a standby; UNAVAILABLE while
// the store does not answer, when no manager can hold or take the lock
// (the active one loses it too): the change can be made once it answers;
// UNAVAILABLE too while this manager takes the lock (back) or loads the
// sessions of a takeover (retaking): it is the active manager in moments;
// FAILED_PRECONDITION, not as a standby, while it leaves the lock to the
// manager the nodes report to (yielding: none reports here).
func (m *Manager) notLeader(todo string) error {
	if m.health.storeDown.Load() {
		return status.Error(codes.Unavailable, "the store does not answer, so no manager holds the planner lock (the active manager's role): try again once it answers, and "+todo)
	}
	if why := m.retaking(); why != "" {
		return status.Error(codes.Unavailable, why+": try again in a few seconds")
	}
	if m.yielding() {
		return status.Error(codes.FailedPrecondition, "no node reports to this manager, so it leaves the planner lock (the active manager's role) to the manager the nodes report to (taking it itself only if none has in "+
			durtext.Written(2*m.LeaderTTL)+"): "+todo)
	}
	if l := m.lead; l != nil && l.serves != nil && !l.yielding.Load() {
		// Nodes report here: the holder gives the lock to this manager
		// once none reports to it (leader.step).
		return status.Error(codes.FailedPrecondition, "this manager is the standby (another manager holds the planner lock), though nodes report to it: should no node report to that manager, it gives the lock to this one within about "+
			durtext.About((giveBackSteps+2)*m.LeaderTTL/3)+": try again then; else (the nodes split between the two managers) "+todo)
	}
	return status.Error(codes.FailedPrecondition, "this manager is the standby (another manager holds the planner lock and serves the nodes): "+todo)
}

// States ListSessions shows for a playing session as its node reports it,
// and for any session without a reservation waiting restore_grace for its
// node (SessionInfo.state); never stored.
const (
	listedPaused   = "paused"   // its RTSP client PAUSEd it (LoadReport.paused_sessions)
	listedFinished = "finished" // its play reached the end of the title (LoadReport.finished_sessions)
	listedOrphaned = "orphaned" // its node died or has not registered since the manager started: it ends unless the node is back within restore_grace
)

// listedState is the state ListSessions shows for session s of node ns
// (mu held): paused or finished as the node's last report says of a
// playing session, its state otherwise.
func listedState(ns *nodeState, s store.Session) string {
	switch {
	case s.State != store.StatePlaying:
	case ns.finished[s.ID]:
		return listedFinished
	case ns.paused[s.ID]:
		return listedPaused
	}
	return s.State
}

// idSet is the set of ids, nil when there are none.
func idSet(ids []string) map[string]bool {
	if len(ids) == 0 {
		return nil
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// checkOverload says why th is no node overload threshold an operator may
// set, "" when it is one: 0 (none: the scheduler's default), or a
// utilization from the scheduler's normal limit (Ul, scheduler.normal,
// 0.8 by default) to 1. Below Ul the node would get no new session before
// the load formula counts it as loaded at all (its overload penalty
// starts at Ul), as for the scheduler's own overload threshold
// (lsm.Config.Overload).
func (m *Manager) checkOverload(th float64) string {
	normal := m.sched.Config.Normal
	switch {
	case math.IsNaN(th) || th < 0 || th > 1:
		return fmt.Sprintf("overload threshold %v: want a utilization from %v (the scheduler's normal limit) to 1, or 0 for the scheduler's default", th, normal)
	case th != 0 && th < normal:
		return fmt.Sprintf("overload threshold %v below the scheduler's normal utilization limit %v: the node would get no new session before the load formula counts it as loaded; give %v to 1, or 0 for the scheduler's default", th, normal, normal)
	}
	return ""
}

// validPolicies names the scheduling policies vodctl policy NAME takes,
// for a refusal: "the valid names are chbl, dh, ...".
func validPolicies() string {
	return "the valid names are " + strings.Join(lsm.Policies(), ", ")
}
