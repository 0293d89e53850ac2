package acm

import (
	"context"
	"slices"

	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// stateEvictions is the state key of the operator's evictions ordered
// while their node was down (opOrder): the command waits in the node's
// queue for the node to come back, and a manager that restarts
// meanwhile, or the standby that takes over, lost that queue; it orders
// the eviction at the node's registration instead
// (restoreEvictionsLocked).
const stateEvictions = "evictions" // []opOrder as JSON

// readEvictOrders returns the stored eviction orders (opOrder; nil when
// none); a malformed value as readNodeSettings.
func (m *Manager) readEvictOrders(ctx context.Context, strict bool) ([]opOrder, error) {
	return m.readOrders(ctx, stateEvictions, "eviction orders", strict)
}

// saveEvictOrderOpLocked adds the operator's eviction of title on node,
// down (or, with keep false, removes it) to the stored orders
// (saveOrderOpLocked, kept prefetchOrderTTL) (opMu held). ctx bounds the
// read and the write.
func (m *Manager) saveEvictOrderOpLocked(ctx context.Context, node, title string, keep bool) error {
	return m.saveOrderOpLocked(ctx, stateEvictions, "eviction orders", node, title, keep)
}

// noteEvictOrderLocked records the operator's eviction of title on node,
// down, among those this manager carries out at the node's registration
// and settles by its reports (evictOrders; mu held, with the order's
// command queued, so that no registration comes between the two).
func (m *Manager) noteEvictOrderLocked(node, title string) {
	if m.evictOrders == nil {
		m.evictOrders = map[string]map[string]bool{}
	}
	if m.evictOrders[node] == nil {
		m.evictOrders[node] = map[string]bool{}
	}
	m.evictOrders[node][title] = true
}

// dropEvictOrderLocked forgets the operator's eviction of title on node
// waiting for the node, here and, in the background, in the store (mu
// held): the operator prefetched or pinned the title there since.
func (m *Manager) dropEvictOrderLocked(node, title string) {
	if !m.evictOrders[node][title] {
		return
	}
	delete(m.evictOrders[node], title)
	m.evictOrderDoneLocked(node, title)
}

// loadEvictOrders reads the stored eviction orders into those carried out
// at each node's registration (at Start and when taking over; opMu held).
func (m *Manager) loadEvictOrders(ctx context.Context) error {
	stored, err := m.readEvictOrders(ctx, false)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.evictOrders = map[string]map[string]bool{}
	for _, o := range stored {
		if now.Sub(o.At) > prefetchOrderTTL {
			continue
		}
		if m.evictOrders[o.Node] == nil {
			m.evictOrders[o.Node] = map[string]bool{}
		}
		m.evictOrders[o.Node][o.Title] = true
	}
	return nil
}

// restoreEvictionsLocked carries out, at node ns's registration (its
// titles synced, its sessions restored; mu held), the operator's
// evictions ordered while it was down, on the active manager only (a
// standby orders nothing; its orders are read again when it takes over):
// one whose command still waits in the node's queue (this manager
// ordered it) is left to it; one the queue lost (a manager restarted, or
// took over, since) is ordered again when the node holds the title, as
// Admin.Evict orders it, or, refused now (played there), logged. An order
// is settled, forgotten and removed from the store, by the node's first
// report without the title (settleEvictOrdersLocked).
func (m *Manager) restoreEvictionsLocked(ns *nodeState) {
	if len(m.evictOrders[ns.id]) == 0 || !m.Leader() {
		return
	}
	for title := range m.evictOrders[ns.id] {
		queued := slices.ContainsFunc(ns.queue, func(c *pb.NodeCommand) bool { return c.GetEvict().GetTitleId() == title })
		if queued || ns.titles[title] == nil {
			continue
		}
		if err := m.evictLocked(ns.id, title, evictOperator); err != nil {
			m.log.Warn("operator's eviction ordered while the node was down not carried out at its registration", "node", ns.id, "title", title, "err", status.Convert(err).Message())
		} else {
			m.log.Info("operator's eviction ordered while the node was down carried out at its registration", "node", ns.id, "title", title)
		}
	}
}

// settleEvictOrdersLocked forgets, and removes from the store in the
// background, the operator's evictions of node ns carried out: those whose
// title its report (titles) does not list (mu held; the active manager
// only). The node may have come back by its heartbeats alone, taking the
// queued command with no registration.
func (m *Manager) settleEvictOrdersLocked(ns *nodeState, titles []*pb.StoredTitle) {
	orders := m.evictOrders[ns.id]
	if len(orders) == 0 || !m.Leader() {
		return
	}
	for title := range orders {
		if !slices.ContainsFunc(titles, func(st *pb.StoredTitle) bool { return st.GetTitleId() == title }) {
			delete(orders, title)
			m.evictOrderDoneLocked(ns.id, title)
		}
	}
}

// evictOrderDoneLocked removes the stored eviction order of title on
// node in the background (removeOrderLater; mu held); one given again
// meanwhile stays.
func (m *Manager) evictOrderDoneLocked(node, title string) {
	m.removeOrderLater(stateEvictions, "eviction", node, title, func() bool { return m.evictOrders[node][title] })
}

// dropNodeEvictOrdersOpLocked forgets node's eviction orders, here and in
// the store (a node forgotten; opMu held).
func (m *Manager) dropNodeEvictOrdersOpLocked(ctx context.Context, node string) error {
	m.mu.Lock()
	delete(m.evictOrders, node)
	m.mu.Unlock()
	_, err := m.dropNodeOrdersOpLocked(ctx, stateEvictions, "eviction orders", node)
	return err
}
