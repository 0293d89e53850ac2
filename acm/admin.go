package acm

import (
	"context"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
)

// admin implements pb.AdminServer. Pin, Unpin are UNIMPLEMENTED.
type admin struct {
	pb.UnimplementedAdminServer
	m *Manager
}

// ListTitles returns the catalog in id order.
func (a *admin) ListTitles(context.Context, *pb.ListTitlesRequest) (*pb.ListTitlesResponse, error) {
	ts := a.m.sortedTitles()
	out := &pb.ListTitlesResponse{Titles: make([]*pb.Title, 0, len(ts))}
	for _, t := range ts {
		out.Titles = append(out.Titles, titleProto(t))
	}
	return out, nil
}

// nodeInfoLocked describes node n (mu held).
func (m *Manager) nodeInfoLocked(n *lsm.Node) *pb.NodeInfo {
	return &pb.NodeInfo{
		NodeId: n.ID, RtspAddr: n.RTSPAddr, HttpAddr: n.HTTPAddr,
		Capacity: &pb.NodeCapacity{EgressBps: n.Capacity.EgressBps, MaxSessions: int32(n.Capacity.MaxSessions), DiskBytes: n.Capacity.DiskBytes},
		Alive:    n.Alive, Draining: n.Draining, Weight: int32(n.Weight),
		Sessions: int32(n.Sessions), FillSessions: int32(n.FillSessions), ReservedBps: n.ReservedBps,
		EgressBps: n.EgressBps, DiskFreeBytes: n.DiskFreeBytes, Load: m.sched.Load(n.Index),
		Titles: int32(n.Titles()), LastHeartbeatUnixMs: n.LastHeartbeat.UnixMilli(), Overload: n.Overload,
	}
}

// ListNodes returns every node ever registered, in id order, with its
// load (lsm.Load), reservations and liveness.
func (a *admin) ListNodes(context.Context, *pb.ListNodesRequest) (*pb.ListNodesResponse, error) {
	m := a.m
	m.mu.Lock()
	out := &pb.ListNodesResponse{}
	for _, n := range m.sched.Nodes {
		out.Nodes = append(out.Nodes, m.nodeInfoLocked(n))
	}
	m.mu.Unlock()
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].NodeId < out.Nodes[j].NodeId })
	return out, nil
}

// SetNode changes a node's weight, overload threshold and/or drain flag at
// run time; a drain
// change is also sent to the node (DrainCommand). NOT_FOUND for an
// unknown node, INVALID_ARGUMENT for a negative weight.
func (a *admin) SetNode(_ context.Context, req *pb.SetNodeRequest) (*pb.NodeInfo, error) {
	m := a.m
	if req.Weight != nil && req.GetWeight() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "weight %d < 0", req.GetWeight())
	}
	if req.Overload != nil && !(req.GetOverload() >= 0 && req.GetOverload() <= 1) {
		return nil, status.Errorf(codes.InvalidArgument, "overload threshold %v out of [0, 1]", req.GetOverload())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.sched.Node(req.GetNodeId())
	if n == nil {
		return nil, status.Errorf(codes.NotFound, "node %q is not registered", req.GetNodeId())
	}
	if req.Weight != nil {
		_ = m.sched.SetWeight(n.ID, int(req.GetWeight()))
	}
	if req.Overload != nil {
		_ = m.sched.SetOverload(n.ID, req.GetOverload())
	}
	if req.Draining != nil {
		_ = m.sched.SetDraining(n.ID, req.GetDraining())
		if ns := m.nodes[n.ID]; ns != nil && !ns.push(drainCmd(req.GetDraining())) {
			m.log.Warn("drain command not sent: command queue full", "node", n.ID)
		}
	}
	m.log.Info("node changed by operator", "node", n.ID, "weight", n.Weight, "draining", n.Draining, "overload", n.Overload)
	m.kickPump()
	return m.nodeInfoLocked(n), nil
}

// ListSessions returns the live sessions (admitted and playing), by
// admission time, of one node or of all.
func (a *admin) ListSessions(_ context.Context, req *pb.ListSessionsRequest) (*pb.ListSessionsResponse, error) {
	m := a.m
	m.mu.Lock()
	var ss []store.Session
	for _, s := range m.sessions {
		if req.GetNodeId() == "" || s.Node == req.GetNodeId() {
			ss = append(ss, s.Session)
		}
	}
	m.mu.Unlock()
	sort.Slice(ss, func(i, j int) bool {
		if !ss[i].AdmittedAt.Equal(ss[j].AdmittedAt) {
			return ss[i].AdmittedAt.Before(ss[j].AdmittedAt)
		}
		return ss[i].ID < ss[j].ID
	})
	out := &pb.ListSessionsResponse{Sessions: make([]*pb.SessionInfo, 0, len(ss))}
	for _, s := range ss {
		si := &pb.SessionInfo{SessionId: s.ID, User: s.User, TitleId: s.Title, NodeId: s.Node, ClientAddr: s.ClientAddr,
			State: s.State, BitrateBps: s.BitrateBps, AdmittedUnixMs: s.AdmittedAt.UnixMilli(), Protocol: s.Protocol}
		if !s.StartedAt.IsZero() {
			si.StartedUnixMs = s.StartedAt.UnixMilli()
		}
		out.Sessions = append(out.Sessions, si)
	}
	return out, nil
}

func (m *Manager) policyInfoLocked() *pb.PolicyInfo {
	return &pb.PolicyInfo{Policy: m.sched.Policy().Name(), Available: lsm.Policies(), StoragePolicy: m.evictor.Name()}
}

// GetPolicy returns the scheduling policy, the registered ones and the
// eviction policy.
func (a *admin) GetPolicy(context.Context, *pb.GetPolicyRequest) (*pb.PolicyInfo, error) {
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	return a.m.policyInfoLocked(), nil
}

// SetPolicy switches the scheduling policy at run time; reservations and
// sessions stay. INVALID_ARGUMENT for an unknown name.
func (a *admin) SetPolicy(_ context.Context, req *pb.SetPolicyRequest) (*pb.PolicyInfo, error) {
	m := a.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.sched.SetPolicy(req.GetPolicy()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	m.log.Info("scheduling policy changed by operator", "policy", req.GetPolicy())
	m.kickPump()
	return m.policyInfoLocked(), nil
}

// ListPlacement returns the replica view (node -> titles stored or
// filling, from the nodes' reports and the fills ordered since), filtered
// by title and/or node, in (title, node) order.
func (a *admin) ListPlacement(_ context.Context, req *pb.ListPlacementRequest) (*pb.ListPlacementResponse, error) {
	m := a.m
	out := &pb.ListPlacementResponse{}
	m.mu.Lock()
	for id, ns := range m.nodes {
		if req.GetNodeId() != "" && id != req.GetNodeId() {
			continue
		}
		for _, t := range ns.titles {
			if req.GetTitleId() != "" && t.GetTitleId() != req.GetTitleId() {
				continue
			}
			out.Replicas = append(out.Replicas, &pb.Replica{NodeId: id, TitleId: t.GetTitleId(),
				StoredBytes: t.GetStoredBytes(), SizeBytes: t.GetSizeBytes(), Filling: t.GetFilling()})
		}
	}
	m.mu.Unlock()
	sort.Slice(out.Replicas, func(i, j int) bool {
		a, b := out.Replicas[i], out.Replicas[j]
		if a.TitleId != b.TitleId {
			return a.TitleId < b.TitleId
		}
		return a.NodeId < b.NodeId
	})
	return out, nil
}

// ListFills returns the fills in progress (demand and prefetch) from the
// nodes' last reports, in (node, title) order.
func (a *admin) ListFills(context.Context, *pb.ListFillsRequest) (*pb.ListFillsResponse, error) {
	m := a.m
	out := &pb.ListFillsResponse{}
	m.mu.Lock()
	for id, ns := range m.nodes {
		for _, t := range ns.titles {
			if t.GetFilling() {
				out.Fills = append(out.Fills, &pb.Fill{NodeId: id, TitleId: t.GetTitleId(), StoredBytes: t.GetStoredBytes(),
					SizeBytes: t.GetSizeBytes(), Prefetch: t.GetPrefetch()})
			}
		}
	}
	m.mu.Unlock()
	sort.Slice(out.Fills, func(i, j int) bool {
		if out.Fills[i].NodeId != out.Fills[j].NodeId {
			return out.Fills[i].NodeId < out.Fills[j].NodeId
		}
		return out.Fills[i].TitleId < out.Fills[j].TitleId
	})
	return out, nil
}

// Prefetch orders a fill of a title on a node ahead of demand; with no
// node, on the live, non-draining node with the most free disk that does
// not hold it. NOT_FOUND for an unknown title or node,
// FAILED_PRECONDITION when no node can take it, ALREADY_EXISTS when the
// node holds or fills it, RESOURCE_EXHAUSTED when the node's command
// queue is full.
func (a *admin) Prefetch(_ context.Context, req *pb.PlacementRequest) (*pb.PlacementAck, error) {
	m := a.m
	t, ok := m.titles()[req.GetTitleId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "title %q is not in the catalog", req.GetTitleId())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := req.GetNodeId()
	if id == "" {
		best := int64(-1)
		for nid, ns := range m.nodes {
			n := m.sched.Node(nid)
			if n == nil || !m.sched.InService(n) || ns.titles[t.ID] != nil {
				continue
			}
			if ns.diskFree > best || (ns.diskFree == best && nid < id) {
				id, best = nid, ns.diskFree
			}
		}
		if id == "" {
			return nil, status.Errorf(codes.FailedPrecondition, "no node in service without title %q", t.ID)
		}
	}
	if err := m.prefetchLocked(id, t); err != nil {
		return nil, err
	}
	return &pb.PlacementAck{NodeId: id, Message: "prefetch ordered"}, nil
}

func (m *Manager) prefetchLocked(id string, t store.Title) error {
	ns := m.nodes[id]
	if ns == nil || m.sched.Node(id) == nil {
		return status.Errorf(codes.NotFound, "node %q is not registered", id)
	}
	if ns.titles[t.ID] != nil {
		return status.Errorf(codes.AlreadyExists, "node %q already holds or fills %q", id, t.ID)
	}
	if !ns.push(prefetchCmd(t.ID)) {
		return status.Errorf(codes.ResourceExhausted, "command queue of node %q is full", id)
	}
	ns.titles[t.ID] = &pb.StoredTitle{TitleId: t.ID, SizeBytes: t.SizeBytes, Filling: true, Prefetch: true}
	ns.diskFree -= t.SizeBytes
	_ = m.sched.SetReplica(id, t.ID, true, 0)
	m.log.Info("prefetch ordered", "node", id, "title", t.ID)
	return nil
}

// Evict orders a node to remove a title. NOT_FOUND for an unknown node or
// a title the node does not hold, FAILED_PRECONDITION while a session
// plays or fills it there (an eviction never cuts a playing session),
// RESOURCE_EXHAUSTED when the node's command queue is full.
func (a *admin) Evict(_ context.Context, req *pb.PlacementRequest) (*pb.PlacementAck, error) {
	m := a.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.evictLocked(req.GetNodeId(), req.GetTitleId()); err != nil {
		return nil, err
	}
	return &pb.PlacementAck{NodeId: req.GetNodeId(), Message: "eviction ordered"}, nil
}

func (m *Manager) evictLocked(id, title string) error {
	ns := m.nodes[id]
	if ns == nil || m.sched.Node(id) == nil {
		return status.Errorf(codes.NotFound, "node %q is not registered", id)
	}
	st := ns.titles[title]
	if st == nil {
		return status.Errorf(codes.NotFound, "node %q does not hold title %q", id, title)
	}
	if ns.active[title] > 0 || st.GetSessions() > 0 || st.GetFilling() {
		return status.Errorf(codes.FailedPrecondition, "title %q is playing or filling on node %q", title, id)
	}
	if !ns.push(evictCmd(title)) {
		return status.Errorf(codes.ResourceExhausted, "command queue of node %q is full", id)
	}
	ns.diskFree += st.GetStoredBytes()
	delete(ns.titles, title)
	_ = m.sched.DropReplica(id, title)
	m.log.Info("eviction ordered", "node", id, "title", title)
	return nil
}
