package acm

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// defaultPopularityLimit is how many titles ListPopularity lists when the
// request sets no limit: the most demanded.
const defaultPopularityLimit = 20

// secondsPerHour turns a request rate per second into one per hour.
const secondsPerHour = 3600

// ListPopularity lists what the storage planner (the Replicator) learnt
// from the viewers' requests: each title's request rates (requests per
// hour, with the half-lives in seconds), mean session (seconds), expected
// demand now and at the remembered peak (bit/s), the catalog's hint, the
// replicas the current plan wants and where, and the complete copies on
// the alive nodes, ranked by expected demand (highest first), the first
// limit of them (defaultPopularityLimit when 0), or the one title of the
// filter; with the cluster's total demand and peak (bit/s) and when the
// popularity snapshot was restored and last saved. INVALID_ARGUMENT for a
// negative limit; FAILED_PRECONDITION without the Replicator (storage
// planner none, or another Planner: nothing is learnt); NOT_FOUND for a
// title neither in the catalog, known to the planner nor held by a node.
// standby: this manager does not hold the planner lock, and lists the
// popularity it restored, not the active manager's.
func (a *admin) ListPopularity(_ context.Context, req *pb.ListPopularityRequest) (*pb.ListPopularityResponse, error) {
	m := a.m
	limit := int(req.GetLimit())
	switch {
	case limit < 0:
		return nil, status.Errorf(codes.InvalidArgument, "limit %d: want 0 (the %d most demanded titles) or more", limit, defaultPopularityLimit)
	case limit == 0:
		limit = defaultPopularityLimit
	}
	if m.rep == nil {
		why := ""
		if m.plannerName() == smm.PlannerNone {
			why = "; titles are filled on demand only"
		}
		return nil, status.Errorf(codes.FailedPrecondition, "the storage planner is %s, not %s (the manager's storage.planner): it learns no popularity%s", m.plannerName(), smm.PlannerReplicate, why)
	}
	cat := m.titles()
	info := func(id string) (smm.TitleInfo, bool) {
		t, ok := cat[id]
		return planTitle(t), ok
	}
	cfg := m.rep.Config()
	out := &pb.ListPopularityResponse{Standby: m.standby(), HalfLifeS: cfg.HalfLife.Seconds(), ValueHalfLifeS: cfg.RankHalfLife.Seconds(),
		RestoredUnixMs: m.popRestoredMs.Load(), SavedUnixMs: m.popSavedMs.Load()}
	// The popularity is read from a copy, without mu: a pass over every
	// title the planner knows with its catalog entry takes tens of
	// milliseconds with a hundred thousand, the copy one memory copy.
	m.popCopyMu.Lock()
	defer m.popCopyMu.Unlock()
	m.mu.Lock()
	now := m.now()
	m.popCopy = m.rep.CopyPopularity(m.popCopy)
	m.mu.Unlock()
	id := req.GetTitleId()
	var v smm.PopularityView
	if id == "" {
		v = m.popCopy.TitleDemands(now, info, limit)
	} else {
		v = m.popCopy.TitleDemandOf(id, now, info)
	}
	out.Total, out.DemandBps, out.PeakDemandBps = int32(v.Known), v.Demand, v.Peak
	m.mu.Lock()
	defer m.mu.Unlock()
	pinned := map[string]bool{}
	for _, p := range m.pins.List() {
		pinned[p.Title] = true
	}
	if id != "" && v.Titles[0].Rank == 0 {
		if _, ok := cat[id]; !ok && !pinned[id] && !m.heldAnywhereLocked(id) {
			return nil, status.Errorf(codes.NotFound, "title %q is not in the catalog, the storage planner knows nothing of it and no node holds it", id)
		}
	}
	for _, d := range v.Titles {
		out.Titles = append(out.Titles, &pb.TitlePopularity{TitleId: d.Title, Rank: int32(d.Rank), RequestsPerHour: d.Rate * secondsPerHour,
			ValueRequestsPerHour: d.Value * secondsPerHour, MeanSessionS: d.MeanSession, DemandBps: d.Demand,
			PeakDemandBps: d.PeakDemand, CatalogPopularityPerDay: cat[d.Title].PopularityPerDay,
			PlannedReplicas: int32(d.Replicas), PlannedNodes: d.Nodes, CompleteCopies: m.completeCopiesLocked(d.Title),
			Pinned: pinned[d.Title]})
	}
	return out, nil
}

// completeCopiesLocked counts the alive nodes whose last report holds a
// complete copy of title of the version the origin serves (not stale);
// mu held.
func (m *Manager) completeCopiesLocked(title string) int32 {
	var n int32
	for id, ns := range m.nodes {
		t := ns.titles[title]
		if t == nil || t.GetFilling() {
			continue
		}
		if s := ns.stale[title]; s != nil && s.warned {
			continue
		}
		if node := m.sched.Node(id); node != nil && node.Alive {
			n++
		}
	}
	return n
}
