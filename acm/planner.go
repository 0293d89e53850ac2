package acm

import (
	"time"

	"vodcluster/smm"
)

// planLoop runs the storage planner every PlanInterval and carries out
// its orders (prefetch and evict commands down the nodes' streams).
func (m *Manager) planLoop() {
	t := time.NewTicker(m.PlanInterval)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.plan(m.now())
		}
	}
}

// plan builds the planner's view of the cluster, asks it for orders and
// carries out those that still make sense (known node and title, an
// eviction of nothing in use).
func (m *Manager) plan(now time.Time) {
	cat := m.titles()
	m.mu.Lock()
	defer m.mu.Unlock()
	view := &smm.ClusterView{Titles: make(map[string]smm.TitleInfo, len(cat))}
	for _, t := range cat {
		view.Titles[t.ID] = smm.TitleInfo{ID: t.ID, Bytes: t.SizeBytes, Bitrate: t.BitrateBps, Duration: t.DurationS}
	}
	fills := 0
	for _, n := range m.sched.Nodes {
		ns := m.nodes[n.ID]
		if ns == nil {
			continue
		}
		nv := smm.NodeView{ID: n.ID, Alive: m.sched.InService(n), DiskBytes: n.Capacity.DiskBytes,
			EgressBps: n.Capacity.EgressBps, Utilization: n.Utilization(), Fills: n.ActiveFills}
		for id, st := range ns.titles {
			nv.Items = append(nv.Items, smm.Item{Title: id, Bytes: st.GetStoredBytes(),
				InUse:      st.GetSessions() > 0 || st.GetFilling() || ns.active[id] > 0,
				LastAccess: time.UnixMilli(st.GetLastAccessUnixMs()), Hits: m.pop.Rate(id, now)})
		}
		view.Nodes = append(view.Nodes, nv)
		fills += n.ActiveFills
	}
	view.OriginFree = max(0, m.OriginChannels-fills)
	for _, a := range m.planner.Plan(now, view) {
		var err error
		switch a.Kind {
		case smm.Prefetch:
			t, ok := cat[a.Title]
			if !ok {
				continue
			}
			err = m.prefetchLocked(a.Node, t)
		case smm.Evict:
			err = m.evictLocked(a.Node, a.Title)
		}
		if err != nil {
			m.log.Warn("planner order not carried out", "kind", a.Kind.String(), "node", a.Node, "title", a.Title, "err", err)
		}
	}
}
