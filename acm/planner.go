package acm

import (
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// planLoop runs the storage planner (on the leader only: plan returns at
// once on a standby) every PlanInterval, at once when
// kicked (kickPlan), one heartbeat interval after a node registers
// (kickPlanSoon: nodes that start together are all in the plan's view),
// and when the Replicator says demand shifted (asked every ShiftCheck),
// and saves the popularity snapshot and the login guard's known pairs
// every PopularitySave, and the popularity snapshot alone at once when
// kicked (kickPopularitySave: a keep started). After a start or a
// takeover, plans wait for the restored plan's nodes to register
// (planWaits).
func (m *Manager) planLoop() {
	plan := time.NewTicker(m.PlanInterval)
	defer plan.Stop()
	soon := time.NewTimer(time.Hour)
	soon.Stop()
	defer soon.Stop()
	armed := false
	shift := time.NewTicker(m.ShiftCheck)
	defer shift.Stop()
	save := time.NewTicker(m.PopularitySave)
	defer save.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-plan.C:
			m.plan(m.now())
		case <-m.planKick:
			m.plan(m.now())
		case <-m.planSoon:
			if !armed {
				soon.Reset(m.sched.Config.HeartbeatInterval)
				armed = true
			}
		case <-soon.C:
			armed = false
			m.plan(m.now())
		case <-shift.C:
			now := m.now()
			m.mu.Lock()
			shifted := m.rep != nil && m.rep.Shifted(now)
			m.mu.Unlock()
			if shifted {
				m.log.Debug("demand shifted: planning early")
				m.plan(now)
			}
		case <-save.C:
			if m.Leader() { // a standby's snapshot would overwrite the leader's
				// One wait for both: a stalled store holds the plan loop
				// up once; the known logins are tried again next time.
				by := time.Now().Add(stateWriteWait)
				m.savePopularity(by)
				m.saveKnownLogins(by)
			}
		case <-m.popSave:
			if m.Leader() {
				m.savePopularity(time.Now().Add(stateWriteWait))
			}
		}
	}
}

// kickPopularitySave asks the plan loop to save the popularity snapshot
// now (savePopularity), not at the next PopularitySave: a keep started
// (smm.Replicator.KeepsStarted), stored only there. It never waits, and
// may be called with mu held: the loop takes mu to read the snapshot and
// writes it to the store without mu. Kicks before the save coalesce into
// one.
func (m *Manager) kickPopularitySave() {
	select {
	case m.popSave <- struct{}{}:
	default:
	}
}

// kickPlan asks the plan loop to plan now.
func (m *Manager) kickPlan() {
	select {
	case m.planKick <- struct{}{}:
	default:
	}
}

// kickPlanSoon asks the plan loop to plan one heartbeat interval from now
// (or at the time already set).
func (m *Manager) kickPlanSoon() {
	select {
	case m.planSoon <- struct{}{}:
	default:
	}
}

// plan builds the planner's view of the cluster, asks it for orders and
// carries them out in order (each eviction before the prefetch it makes
// room for). An order that cannot be carried out is logged; a prefetch
// that could not be ordered (other than one already there) counts as
// failed for the Replicator, so it is retried after its backoff rather
// than awaited.
//
// Plans are serialised by planMu. With the Replicator, mu is held only
// twice, briefly: to take a snapshot (planSnapshotLocked: the nodes'
// figures, and their title, session and hit maps shared copy on write;
// Replicator.StartPlan: a copy of the planner's state), and to carry out
// the orders (Replicator.FinishPlan, carryOutLocked). The view is built
// and the plan computed without mu, so front-door admissions, session
// events and load reports go on meanwhile (the Replicator logs their
// changes and replays them on the plan's state). Each order is checked
// against the state when it is carried out, not the snapshot's
// (carryOutLocked). A manager that lost the planner lock meanwhile
// carries out nothing. Another Planner (Manager.Planner, not a
// Replicator: not safe for use beside Observe) plans under mu.
func (m *Manager) plan(now time.Time) {
	if !m.Leader() {
		return // a standby: the manager holding the planner lock plans
	}
	m.planMu.Lock()
	defer m.planMu.Unlock()
	if _, none := m.planner.(smm.NoPlanner); none && m.rep == nil {
		return // it orders nothing: no view to build
	}
	if m.planWaits(now) {
		return // the restored plan's nodes are still registering
	}
	start := time.Now()
	defer func() { planSeconds.Observe(time.Since(start).Seconds()) }()
	catp := m.catalog.Load()
	if m.rep == nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		view := m.planSnapshotLocked(false).view(m.planTitlesFor(catp))
		m.carryOutLocked(m.planner.Plan(now, view), *catp, now)
		return
	}
	m.mu.Lock()
	snap, job := m.startPlanLocked(now)
	m.mu.Unlock()
	job.Run(snap.view(m.planTitlesFor(catp)))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finishPlanLocked(snap, job, *catp, now)
}

// startPlanLocked takes what a plan at now reads (mu held): the nodes'
// snapshot and the Replicator's copy.
func (m *Manager) startPlanLocked(now time.Time) (*planSnapshot, *smm.PlanJob) {
	return m.planSnapshotLocked(true), m.rep.StartPlan(now)
}

// finishPlanLocked ends the plan of job on snap (mu held): the Replicator
// takes the plan's state, the operator's prefetches it dropped are
// forgotten (forgetDroppedLocked) and its orders are carried out, unless
// this manager lost the planner lock meanwhile (the new leader plans).
func (m *Manager) finishPlanLocked(snap *planSnapshot, job *smm.PlanJob, cat map[string]store.Title, now time.Time) {
	snap.release()
	if !m.Leader() {
		m.rep.AbortPlan(job)
		return
	}
	acts := m.rep.FinishPlan(job)
	m.forgetDroppedLocked()
	m.carryOutLocked(acts, cat, now)
}

// carryOutLocked carries out the planner's orders in order (mu held),
// each checked against the state now, which may have moved since the
// view the plan was computed from: prefetchLocked refuses a node out of
// service and a title the node holds, fills, was ordered to fill or has a
// viewer admitted for (no second fill), and a prefetch to a node that
// cannot write its disk is not carried out; evictLocked refuses a title
// playing, filling, reserved for an admitted viewer or pinned (an
// eviction never cuts a session). An eviction is not carried out either
// on a node out of service, or when the prefetch it makes room for (the
// next on its node) would be refused. A prefetch not carried out for
// another reason than ALREADY_EXISTS counts as failed for the Replicator
// (retried after its backoff).
func (m *Manager) carryOutLocked(acts []smm.Action, cat map[string]store.Title, now time.Time) {
	// check is what refuses a prefetch before any room is made for it.
	check := func(a smm.Action) (store.Title, error) {
		t, ok := cat[a.Title]
		if !ok {
			return t, status.Errorf(codes.NotFound, "title %q is not in the catalog", a.Title)
		}
		_, err := m.prefetchCheckLocked(a.Node, t)
		if err == nil {
			// A copy no viewer could play there (its bitrate over the
			// node's egress_bps) would take disk and an origin transfer.
			err = m.streamableLocked(a.Node, t)
		}
		return t, err
	}
	for i, a := range acts {
		var err error
		switch a.Kind {
		case smm.Evict:
			if n := m.sched.Node(a.Node); n != nil && !m.sched.InService(n) {
				err = status.Errorf(codes.FailedPrecondition, "node %q is not in service: it %s", a.Node, outOfService(n))
				break
			}
			if j := slices.IndexFunc(acts[i+1:], func(b smm.Action) bool { return b.Kind == smm.Prefetch && b.Node == a.Node }); j >= 0 {
				if _, perr := check(acts[i+1+j]); perr != nil {
					err = status.Errorf(codes.FailedPrecondition, "the prefetch of %q it makes room for is not carried out: %v", acts[i+1+j].Title, perr)
					break
				}
			}
			err = m.evictLocked(a.Node, a.Title, evictPlanner)
		case smm.Prefetch:
			t, cerr := check(a)
			if _, known := cat[a.Title]; !known {
				continue
			}
			if err = cerr; err == nil {
				err = m.prefetchLocked(a.Node, t, now)
			}
			if err != nil && status.Code(err) != codes.AlreadyExists && m.rep != nil {
				m.fillFailedLocked(a.Node, a.Title, status.Convert(err).Message(), now)
			}
		}
		if err != nil {
			if overtaken(err) {
				// The state moved since the plan's view (a viewer's fill
				// took the room, the title began playing, the node left
				// service): the next plan sees it. Nothing failed.
				m.log.Info("planner order overtaken: not carried out", "kind", a.Kind.String(), "node", a.Node, "title", a.Title, "why", status.Convert(err).Message())
			} else {
				m.log.Warn("planner order not carried out", "kind", a.Kind.String(), "node", a.Node, "title", a.Title, "err", err)
			}
			continue
		}
		m.log.Info("planner order", "kind", a.Kind.String(), "node", a.Node, "title", a.Title)
	}
}

// overtaken reports whether err, an order's refusal, says only that the
// state moved since the plan was computed (ALREADY_EXISTS,
// FAILED_PRECONDITION, NOT_FOUND: the title evicted or the node gone
// meanwhile, RESOURCE_EXHAUSTED for room), not that something is wrong
// (a node's full command queue).
func overtaken(err error) bool {
	st := status.Convert(err)
	switch st.Code() {
	case codes.AlreadyExists, codes.FailedPrecondition, codes.NotFound:
		return true
	case codes.ResourceExhausted:
		return !strings.HasPrefix(st.Message(), queueFullMsg)
	}
	return false
}

// planSnapshot is what the planner's view is built from, taken under mu
// (planSnapshotLocked) and read without it (view).
type planSnapshot struct {
	nodes          []nodeSnapshot
	pins           *smm.Pins
	originChannels int
	// shared are the nodes whose maps the snapshot reads without mu
	// (copied before they change until release).
	shared []*nodeState
}

// nodeSnapshot is one registered node in a planSnapshot.
type nodeSnapshot struct {
	id          string
	site        string // its site (lsm.NodeSpec.Site), "" when none
	alive       bool   // heartbeats arrive (lsm)
	inService   bool   // in service (lsm) and its free disk reported
	diskFault   bool
	noOrigin    bool    // it has no origin (lsm.NodeSpec.NoOrigin): no prefetch there
	diskBytes   int64   // bytes
	egressBps   int64   // bit/s
	utilization float64 // reserved or measured egress / capacity
	activeFills int     // fills in progress by the node's last report
	titles      map[string]*pb.StoredTitle
	active      map[string]int
	hits        map[string]float64
	partials    map[string]*pb.PartialTitle // replaced whole on a report, never changed: read without mu
}

// planSnapshotLocked takes the planner's snapshot of the registered nodes
// (mu held), in lsm's node order. With share, the snapshot is for reading
// without mu: the nodes' title, session and hit maps are marked copy on
// write (nodeState.share) until release, and the pins are copied; the
// cost is then one pass over the nodes and one over the pins.
func (m *Manager) planSnapshotLocked(share bool) *planSnapshot {
	s := &planSnapshot{pins: m.pins, originChannels: m.OriginChannels, nodes: make([]nodeSnapshot, 0, len(m.sched.Nodes))}
	if m.originUnusable() != "" {
		// No channel free: no prefetch is ordered, nor room made for one,
		// and no failed prefetch spends a retry, until the origin answers.
		s.originChannels = 0
	}
	if share {
		s.pins = m.pins.Clone()
	}
	for _, n := range m.sched.Nodes {
		ns := m.nodes[n.ID]
		if ns == nil {
			continue
		}
		if share {
			ns.share()
			s.shared = append(s.shared, ns)
		}
		s.nodes = append(s.nodes, nodeSnapshot{
			id: n.ID, site: n.Site, alive: n.Alive, inService: m.sched.InService(n) && ns.reported, diskFault: ns.diskFault, noOrigin: n.NoOrigin,
			diskBytes: n.Capacity.DiskBytes, egressBps: n.Capacity.EgressBps, utilization: n.Utilization(),
			activeFills: n.ActiveFills, titles: ns.titles, active: ns.active, hits: ns.hits, partials: ns.partials,
		})
	}
	return s
}

// release ends the snapshot's reading of the nodes' maps (mu held): they
// are changed in place again.
func (s *planSnapshot) release() {
	for _, ns := range s.shared {
		ns.unshare()
	}
	s.shared = nil
}

// view builds the planner's view from the snapshot (without mu when the
// snapshot shares): every registered node with its titles (stored,
// filling, prefetches ordered) and partials, in service or not, the catalog titles,
// and the origin channels still free (OriginChannels minus the fills in
// progress or ordered on live nodes).
func (s *planSnapshot) view(titles map[string]smm.TitleInfo) *smm.ClusterView {
	view := &smm.ClusterView{Titles: titles, Nodes: make([]smm.NodeView, 0, len(s.nodes))}
	fills := 0
	for i := range s.nodes {
		n := &s.nodes[i]
		items := planItems(n.id, n.titles, n.active, n.hits, s.pins, "")
		nf := nodeFills(n.titles, n.activeFills)
		viewFills := nf
		if n.diskFault {
			// It cannot write a fill: no prefetch goes there (the planner
			// orders none to a node at its fill limit); it still serves
			// and keeps what it holds.
			viewFills = math.MaxInt32
		}
		var partials map[string]int64
		if len(n.partials) > 0 {
			partials = make(map[string]int64, len(n.partials))
			for id, p := range n.partials {
				partials[id] = p.GetStoredBytes()
			}
		}
		view.Nodes = append(view.Nodes, smm.NodeView{
			ID: n.id, Site: n.site, Alive: n.inService, NoOrigin: n.noOrigin, DiskFault: n.diskFault, DiskBytes: n.diskBytes,
			EgressBps: n.egressBps, Utilization: n.utilization, Items: items, Fills: viewFills, Partials: partials,
		})
		if n.alive {
			fills += nf
		}
	}
	view.OriginFree = max(0, s.originChannels-fills)
	return view
}

// viewLocked builds the planner's view (mu held) with titles as its
// catalog (see planSnapshot.view).
func (m *Manager) viewLocked(titles map[string]smm.TitleInfo) *smm.ClusterView {
	return m.planSnapshotLocked(false).view(titles)
}

// planTitlesFor returns the catalog *cat (one of m.catalog's maps) as
// the planner sees it (planMu held). The map is shared between plans: it
// is rebuilt only for a new catalog map (the catalog is replaced, never
// changed in place), and nobody writes to it.
func (m *Manager) planTitlesFor(cat *map[string]store.Title) map[string]smm.TitleInfo {
	if m.planTitlesOf == cat {
		return m.planTitles
	}
	ts := make(map[string]smm.TitleInfo, len(*cat))
	for _, t := range *cat {
		ts[t.ID] = planTitle(t)
	}
	m.planTitles, m.planTitlesOf = ts, cat
	return ts
}

// planTitle is t as the planner sees it.
func planTitle(t store.Title) smm.TitleInfo {
	return smm.TitleInfo{ID: t.ID, Bytes: t.SizeBytes, Bitrate: t.BitrateBps, Duration: t.DurationS}
}

// itemsLocked lists ns's titles as the storage policy sees them (mu
// held), without skip (see planItems).
func (m *Manager) itemsLocked(ns *nodeState, skip string) []smm.Item {
	return planItems(ns.id, ns.titles, ns.active, ns.hits, m.pins, skip)
}

// planItems lists the titles of node (its last report's, adjusted by
// the commands since) as the storage policy sees them, in title order,
// without skip: in use while a session plays or the title fills (active:
// live sessions by title), pinned by pins, a fill at the whole title's
// size, hits: requests placed on the node since the title was stored.
func planItems(node string, titles map[string]*pb.StoredTitle, active map[string]int, hits map[string]float64, pins *smm.Pins, skip string) []smm.Item {
	items := make([]smm.Item, 0, len(titles))
	for id, st := range titles {
		if id == skip {
			continue
		}
		filling := st.GetFilling()
		b := st.GetStoredBytes()
		if filling {
			b = max(b, st.GetSizeBytes())
		}
		var last time.Time
		if ms := st.GetLastAccessUnixMs(); ms > 0 {
			last = time.UnixMilli(ms)
		}
		items = append(items, smm.Item{
			Title: id, Bytes: b, InUse: st.GetSessions() > 0 || filling || active[id] > 0, Filling: filling,
			Pinned: pins.Protects(node, id), LastAccess: last, Hits: hits[id],
		})
	}
	slices.SortFunc(items, func(a, b smm.Item) int { return strings.Compare(a.Title, b.Title) })
	return items
}
