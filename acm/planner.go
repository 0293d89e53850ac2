package acm

import (
	"math"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/smm"
)

// planLoop runs the storage planner (on the leader only: plan returns at
// once on a standby) every PlanInterval, at once when
// kicked (kickPlan), one heartbeat interval after a node registers
// (kickPlanSoon: nodes that start together are all in the plan's view),
// and when the Replicator says demand shifted (asked every ShiftCheck),
// and saves the popularity snapshot every PopularitySave.
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
				m.savePopularity()
			}
		}
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
func (m *Manager) plan(now time.Time) {
	if !m.Leader() {
		return // a standby: the manager holding the planner lock plans
	}
	catp := m.catalog.Load()
	cat := *catp
	m.mu.Lock()
	defer m.mu.Unlock()
	view := m.viewLocked(catp, now)
	for _, a := range m.planner.Plan(now, view) {
		var err error
		switch a.Kind {
		case smm.Prefetch:
			t, ok := cat[a.Title]
			if !ok {
				continue
			}
			err = m.prefetchLocked(a.Node, t, now)
			if err != nil && status.Code(err) != codes.AlreadyExists && m.rep != nil {
				m.rep.FillFailed(a.Node, a.Title, now)
			}
		case smm.Evict:
			err = m.evictLocked(a.Node, a.Title)
		}
		if err != nil {
			m.log.Warn("planner order not carried out", "kind", a.Kind.String(), "node", a.Node, "title", a.Title, "err", err)
			continue
		}
		m.log.Info("planner order", "kind", a.Kind.String(), "node", a.Node, "title", a.Title)
	}
}

// viewLocked builds the planner's view (mu held): every registered node
// with its titles (stored, filling, prefetches ordered), in service or
// not, the catalog, and the origin channels still free (OriginChannels
// minus the fills in progress or ordered on live nodes).
func (m *Manager) viewLocked(cat *map[string]store.Title, now time.Time) *smm.ClusterView {
	view := &smm.ClusterView{Titles: m.planTitlesLocked(cat)}
	fills := 0
	for _, n := range m.sched.Nodes {
		ns := m.nodes[n.ID]
		if ns == nil {
			continue
		}
		items := m.itemsLocked(ns, "")
		nf := 0
		for i := range items {
			if items[i].Filling {
				nf++
			}
		}
		nf = max(nf, n.ActiveFills)
		viewFills := nf
		if ns.diskFault {
			// It cannot write a fill: no prefetch goes there (the planner
			// orders none to a node at its fill limit); it still serves
			// and keeps what it holds.
			viewFills = math.MaxInt32
		}
		view.Nodes = append(view.Nodes, smm.NodeView{
			ID: n.ID, Alive: m.sched.InService(n) && ns.reported, DiskBytes: n.Capacity.DiskBytes,
			EgressBps: n.Capacity.EgressBps, Utilization: n.Utilization(), Items: items, Fills: viewFills,
		})
		if n.Alive {
			fills += nf
		}
	}
	view.OriginFree = max(0, m.OriginChannels-fills)
	return view
}

// planTitlesLocked returns the catalog *cat (one of m.catalog's maps) as
// the planner sees it (mu held). The map is shared between plans: it is
// rebuilt only for a new catalog map (the catalog is replaced, never
// changed in place), and nobody writes to it.
func (m *Manager) planTitlesLocked(cat *map[string]store.Title) map[string]smm.TitleInfo {
	if m.planTitlesOf == cat {
		return m.planTitles
	}
	ts := make(map[string]smm.TitleInfo, len(*cat))
	for _, t := range *cat {
		ts[t.ID] = smm.TitleInfo{ID: t.ID, Bytes: t.SizeBytes, Bitrate: t.BitrateBps, Duration: t.DurationS}
	}
	m.planTitles, m.planTitlesOf = ts, cat
	return ts
}

// itemsLocked lists ns's titles as the storage policy sees them (mu
// held), in title order, without skip: in use while a session plays or
// the title fills, pinned by the operator's pins, a fill at the whole
// title's size.
func (m *Manager) itemsLocked(ns *nodeState, skip string) []smm.Item {
	items := make([]smm.Item, 0, len(ns.titles))
	for id, st := range ns.titles {
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
			Title: id, Bytes: b, InUse: st.GetSessions() > 0 || filling || ns.active[id] > 0, Filling: filling,
			Pinned: m.pins.Protects(ns.id, id), LastAccess: last, Hits: ns.hits[id],
		})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Title < items[j].Title })
	return items
}
