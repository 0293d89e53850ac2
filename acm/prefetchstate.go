package acm

import (
	"context"
	"slices"
	"time"

	"vodcluster/proto/durtext"
	pb "vodcluster/proto/vodcluster/v1"
)

// statePrefetches is the state key of the operator's prefetch orders.
const statePrefetches = "prefetches" // []opOrder as JSON

// prefetchOrderTTL is how long an operator's prefetch order is kept in the
// store to be carried out by a restarted manager (or the standby taking
// over): longer than its retries last (smm's MaxHandRetries, one to two
// hours with the default backoff).
const prefetchOrderTTL = 6 * time.Hour

// opOrder is an operator's order on a node as the store keeps it: a
// prefetch (Admin.Prefetch; statePrefetches), which a manager that
// restarts, or the standby that takes over, while the order waits (queued
// behind the node's fill limit or the origin's channels, or in backoff
// after a failed fill) queues again when the node next reports without
// the title, instead of dropping it; or an eviction ordered while its
// node was down (Admin.Evict; stateEvictions, evictstate.go).
type opOrder struct {
	Node  string    `json:"node"`
	Title string    `json:"title"`
	At    time.Time `json:"at"` // when the operator ordered it
	// Attempts is how many times a prefetch order failed so far (smm
	// Replicator.HandAttempts), restored with it (RestoreAttempts): its
	// backoff and its giving up count on across a restart. Absent (0)
	// from an entry written before it was kept, and of an eviction.
	Attempts int `json:"attempts,omitempty"`
}

// readOrders returns the orders stored under key, what they are named in
// errors (nil when none); a malformed value as readNodeSettings.
func (m *Manager) readOrders(ctx context.Context, key, what string, strict bool) ([]opOrder, error) {
	return readStateJSON(m, ctx, key, what, strict, func() []opOrder { return nil })
}

// saveOrderOpLocked adds the operator's order of title on node (or, with
// keep false, removes it) to the orders stored under key, dropping those
// older than prefetchOrderTTL on the way (opMu held). ctx bounds the read
// and the write.
func (m *Manager) saveOrderOpLocked(ctx context.Context, key, what, node, title string, keep bool) error {
	stored, err := m.readOrders(ctx, key, what, true)
	if err != nil {
		return err
	}
	m.mu.Lock()
	now := m.now()
	m.mu.Unlock()
	had := len(stored)
	stored = slices.DeleteFunc(stored, func(o opOrder) bool {
		return (o.Node == node && o.Title == title) || now.Sub(o.At) > prefetchOrderTTL
	})
	if !keep && len(stored) == had {
		return nil
	}
	if keep {
		stored = append(stored, opOrder{Node: node, Title: title, At: now})
	}
	return m.putStateJSON(ctx, key, stored)
}

// dropNodeOrdersOpLocked removes node's orders stored under key (a node
// forgotten; opMu held). read is false when the stored orders could not
// be read (err): whether node has any is unknown.
func (m *Manager) dropNodeOrdersOpLocked(ctx context.Context, key, what, node string) (read bool, err error) {
	stored, err := m.readOrders(ctx, key, what, true)
	if err != nil {
		return false, err
	}
	had := len(stored)
	if stored = slices.DeleteFunc(stored, func(o opOrder) bool { return o.Node == node }); len(stored) == had {
		return true, nil
	}
	return true, m.putStateJSON(ctx, key, stored)
}

// readPrefetchOrders returns the stored prefetch orders (nil when none); a
// malformed value as readNodeSettings.
func (m *Manager) readPrefetchOrders(ctx context.Context, strict bool) ([]opOrder, error) {
	return m.readOrders(ctx, statePrefetches, "prefetch orders", strict)
}

// savePrefetchOrderOpLocked adds the operator's prefetch of title on node
// (or, with keep false, removes it) to the stored orders (saveOrderOpLocked;
// opMu held). Without a Replicator there is nothing to restore orders
// into: nothing is stored. ctx bounds the read and the write (an
// operator's call: adminStoreWait).
func (m *Manager) savePrefetchOrderOpLocked(ctx context.Context, node, title string, keep bool) error {
	if m.rep == nil {
		return nil
	}
	return m.saveOrderOpLocked(ctx, statePrefetches, "prefetch orders", node, title, keep)
}

// loadPrefetchOrders reads the stored prefetch orders into the ones to
// restore, by node (at Start and when taking over; opMu held): each is
// queued again (smm Replicator.Queued) at its node's next report unless
// the node holds or fills the title then (restorePrefetchesLocked).
func (m *Manager) loadPrefetchOrders(ctx context.Context) error {
	if m.rep == nil {
		return nil
	}
	stored, err := m.readPrefetchOrders(ctx, false)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.restoring = map[string][]opOrder{}
	for _, o := range stored {
		if now.Sub(o.At) <= prefetchOrderTTL {
			m.restoring[o.Node] = append(m.restoring[o.Node], o)
		}
	}
	return nil
}

// restorePrefetchesLocked queues again the stored prefetch orders of ns
// (loadPrefetchOrders) whose title it neither holds nor fills in its
// report (cur), once, at its first report since they were loaded (mu
// held; but for those waiting on a stale copy, below). The plan orders them first, as it does the operator's. An order
// the node is filling then is tracked as the operator's prefetch in
// flight (smm Replicator.Prefetched) and stays in the store until the
// node reports the title complete: a fill that fails after the takeover
// is retried, as it would have been by the manager that ordered it. An
// order of a title the node lacks, or holds as a stale copy (staleHeld),
// at a node that registered without an origin (lsm.NodeSpec.NoOrigin), is
// dropped from the store and logged: the node cannot fill it. One of a
// title a node with an origin holds as a stale copy waits for its later
// reports (up to prefetchOrderTTL from the order): it is queued once the
// copy is evicted as stale (not carried out by the copy), carried out if
// a catalog read finds the copy current.
func (m *Manager) restorePrefetchesLocked(ns *nodeState, cur map[string]*pb.StoredTitle, now time.Time) {
	orders, ok := m.restoring[ns.id]
	if !ok || m.rep == nil {
		return
	}
	delete(m.restoring, ns.id)
	cat := m.titles()
	n := m.sched.Node(ns.id)
	var later []opOrder
	for _, o := range orders {
		t, known := cat[o.Title]
		if n != nil && n.NoOrigin && (cur[o.Title] == nil || staleHeld(cur[o.Title], cat)) {
			// It registered without an origin since: it cannot fill
			// (nor fetch the current version of a stale copy).
			m.orderDoneLocked(ns.id, o.Title, true)
			m.log.Warn("operator's prefetch dropped: the node has no origin configured (node origin) and cannot fetch the title", "node", ns.id, "title", o.Title, "ordered", o.At)
			continue
		}
		if c := cur[o.Title]; c != nil && staleHeld(c, cat) {
			if now.Sub(o.At) <= prefetchOrderTTL {
				later = append(later, o) // staleLocked evicts the copy once confirmed and unused
			}
			continue
		}
		if c := cur[o.Title]; known && c.GetFilling() {
			m.noteHandOrderLocked(ns.id, o.Title)
			m.rep.Prefetched(ns.id, o.Title, t.SizeBytes, now)
			m.rep.RestoreAttempts(ns.id, o.Title, o.Attempts)
			m.log.Info("operator's prefetch restored: filling", "node", ns.id, "title", o.Title, "ordered", o.At, "failures", o.Attempts)
			continue
		}
		if cur[o.Title] != nil || !known {
			if known {
				m.orderDoneLocked(ns.id, o.Title, true)
			}
			continue // carried out (or being), or withdrawn since
		}
		m.noteHandOrderLocked(ns.id, o.Title)
		m.rep.Queued(ns.id, o.Title, t.SizeBytes, now)
		m.rep.RestoreAttempts(ns.id, o.Title, o.Attempts)
		m.log.Info("operator's prefetch restored: queued", "node", ns.id, "title", o.Title, "ordered", o.At, "failures", o.Attempts)
	}
	if len(later) > 0 {
		m.restoring[ns.id] = later
	}
}

// dropRestoringLocked forgets the stored order of title on node still to
// be restored (loadPrefetchOrders; mu held): the operator evicted the
// title there, a stale copy the order waited for (restorePrefetchesLocked),
// so the order is not queued again once the copy is gone, lifting the
// eviction's hold.
func (m *Manager) dropRestoringLocked(node, title string) {
	orders, ok := m.restoring[node]
	if !ok {
		return
	}
	if orders = slices.DeleteFunc(orders, func(o opOrder) bool { return o.Title == title }); len(orders) > 0 {
		m.restoring[node] = orders
	} else {
		delete(m.restoring, node)
	}
}

// noteHandOrderLocked records that the operator ordered title on node (mu
// held): its stored order goes once the node reports the title complete.
func (m *Manager) noteHandOrderLocked(node, title string) {
	if m.handOrders == nil {
		m.handOrders = map[[2]string]bool{}
	}
	m.handOrders[[2]string{node, title}] = true
}

// orderDoneLocked forgets the operator's order of title on node when there
// is one (or always, with force), and removes it from the store in the
// background (mu held): carried out, a restart must not order it again
// after the title's eviction. An order of it the operator gives again
// before that removal (marked again by then) stays stored.
func (m *Manager) orderDoneLocked(node, title string, force bool) {
	k := [2]string{node, title}
	if !m.handOrders[k] && !force {
		return
	}
	delete(m.handOrders, k)
	m.removeOrderLater(statePrefetches, "prefetch", node, title, func() bool { return m.handOrders[k] })
}

// removeOrderLater removes the operator's order of title on node stored
// under key (named name: "prefetch", "eviction") in the background (mu
// held), once opMu is free: carried out, a restart must not order it
// again. again, called with mu held, reports whether the operator gave
// it again meanwhile (Admin.Prefetch waits for a plan in progress holding
// opMu, then writes its order before this): then it stays stored.
// Closing, it is left to its TTL (prefetchOrderTTL).
func (m *Manager) removeOrderLater(key, name, node, title string, again func() bool) {
	m.orderWriteLater(again, func(ctx context.Context) {
		if err := m.saveOrderOpLocked(ctx, key, name+" orders", node, title, false); err != nil {
			m.log.Warn("store: carried out "+name+" order not removed (dropped after "+durtext.Written(prefetchOrderTTL)+")", "node", node, "title", title, "err", err)
		}
	})
}

// orderWriteLater runs write, a store write of the operator's orders, in
// the background once opMu is free (it holds it), given 10 s, unless
// stale, called with mu held, reports that the order it is for changed
// meanwhile. Closing, it runs nothing; Close waits for those under way
// (orderWrites).
func (m *Manager) orderWriteLater(stale func() bool, write func(ctx context.Context)) {
	if m.ctx.Err() != nil {
		return
	}
	m.orderWrites.Add(1)
	go func() {
		defer m.orderWrites.Done()
		m.opMu.Lock()
		defer m.opMu.Unlock()
		m.mu.Lock()
		skip := stale()
		m.mu.Unlock()
		if skip {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		write(ctx)
	}()
}

// dropNodePrefetchOrdersOpLocked removes node's prefetch orders from the
// store (dropNodeOrdersOpLocked; a node forgotten; opMu held).
func (m *Manager) dropNodePrefetchOrdersOpLocked(ctx context.Context, node string) (read bool, err error) {
	return m.dropNodeOrdersOpLocked(ctx, statePrefetches, "prefetch orders", node)
}

// dropPrefetchesLocked gives up the prefetches ordered on ns before it
// registered again without an origin (lsm.NodeSpec.NoOrigin), as
// restorePrefetchesLocked gives up a stored one (mu held, before the
// registration's titles are synced): the PrefetchCommands still queued
// for it (ordered while it was away, or while its stream broke) are taken
// out of its queue, since it would only fail them, and every prefetch
// ordered there (queued, sent, or in progress in its last report) that
// the registration does not list (held), or lists as a stale copy (of
// another version than the catalog's: staleHeld), is dropped:
// its pending order, the Replicator's fill (counted failed, not retried
// there) and the operator's stored order, with a warning each. A title
// the registration lists as the catalog has it keeps its order, which the
// sync then finds done.
// The evictions queued there but for the operator's (pb.EvictCommand's
// reason: room for a fill or a prefetch, the plan, a stale copy) are
// taken out too, with a warning each: the node could never fetch those
// titles back. It returns how many prefetches it gave up.
func (m *Manager) dropPrefetchesLocked(ns *nodeState, held []*pb.StoredTitle, now time.Time) int {
	var titles []string
	ns.queue, titles = m.dropNoOriginCmdsLocked(ns, ns.queue)
	for id := range ns.pending {
		titles = append(titles, id)
	}
	for id, pre := range ns.filling {
		if pre { // a prefetch its reports showed filling before it went away
			titles = append(titles, id)
		}
	}
	slices.Sort(titles)
	titles = slices.Compact(titles)
	dropped, cat := 0, m.titles()
	for _, id := range titles {
		if id == "" || slices.ContainsFunc(held, func(t *pb.StoredTitle) bool { return t.GetTitleId() == id && !staleHeld(t, cat) }) {
			continue
		}
		delete(ns.pending, id)
		delete(ns.filling, id) // not counted failed by the sync: given up here
		if m.rep != nil {
			m.rep.FillFailed(ns.id, id, now)
			m.rep.CancelPrefetch(ns.id, id, false) // the operator's: not retried where it cannot fill
		}
		m.orderDoneLocked(ns.id, id, true)
		m.log.Warn("prefetch dropped: the node registered without an origin (node origin) and cannot fetch the title", "node", ns.id, "title", id)
		dropped++
	}
	return dropped
}

// dropNoOriginCmdsLocked takes out of cmds, commands ordered on ns before
// it registered again without an origin (mu held), its PrefetchCommands,
// whose titles it returns, and its EvictCommands but for the operator's,
// each with a warning, their titles no longer counted as being evicted
// (ns.evicting): the node could never fetch those titles back. It
// returns what is left of cmds (edited in place).
func (m *Manager) dropNoOriginCmdsLocked(ns *nodeState, cmds []*pb.NodeCommand) (kept []*pb.NodeCommand, prefetches []string) {
	kept = slices.DeleteFunc(cmds, func(c *pb.NodeCommand) bool {
		if e := c.GetEvict(); e != nil && e.GetReason() != evictOperator {
			delete(ns.evicting, e.GetTitleId())
			m.log.Warn("eviction dropped: the node registered without an origin (node origin) and could not fetch the title back", "node", ns.id, "title", e.GetTitleId(), "reason", e.GetReason())
			return true
		}
		p := c.GetPrefetch()
		if p != nil {
			prefetches = append(prefetches, p.GetTitleId())
		}
		return p != nil
	})
	return kept, prefetches
}
