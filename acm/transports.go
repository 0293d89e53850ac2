package acm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"
)

// stateNodeTransports is the state key of the transports the nodes
// registered with (storedTransport by node id, as JSON): a manager that
// restarts or takes over knows whether a node that has not registered
// with it since serves RTSP media over UDP (noUDPNode).
const stateNodeTransports = "node-transports"

// storedTransport is what the store keeps of a node's registration for
// the front door's 461 to a SETUP that offers only UDP: whether it sends
// over TCP only, and its site.
type storedTransport struct {
	TCPOnly bool   `json:"tcp_only"`
	Site    string `json:"site,omitempty"`
}

// loadTransports reads the stored node transports into knownTransports
// (at Start and when taking over). Errors: the store's; a malformed value
// is logged and taken as none (readStateJSON).
func (m *Manager) loadTransports(ctx context.Context) error {
	st, err := readStateJSON(m, ctx, stateNodeTransports, "node transports", false, func() map[string]storedTransport { return map[string]storedTransport{} })
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.knownTransports = st
	m.mu.Unlock()
	return nil
}

// noteTransport records, at node id's registration, its transport and
// site when they differ from those known, in knownTransports and in the
// store, within StoreTimeout. The store's failure is logged and the entry
// forgotten here, so that the node's next registration writes it again:
// the node is registered all the same, and a manager restarted before
// that may take it for one that sends over TCP only (noUDPNode: a 461
// rather than a 503 to a SETUP that offers only UDP).
func (m *Manager) noteTransport(id string, t storedTransport) {
	m.mu.Lock()
	old, ok := m.knownTransports[id]
	if ok && old == t {
		m.mu.Unlock()
		return
	}
	m.knownTransports[id] = t
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), max(m.StoreTimeout, time.Second))
	defer cancel()
	if err := m.writeTransport(ctx, id, &t); err != nil {
		m.mu.Lock()
		if m.knownTransports[id] == t {
			delete(m.knownTransports, id)
		}
		m.mu.Unlock()
		m.log.Warn("store: the node's transport not stored (a manager restarted before the node registers again may answer a SETUP that offers only UDP 461 rather than 503)", "node", id, "tcp_only", t.TCPOnly, "err", err)
	}
}

// transportsLock is the store's lock (store.Locker) a manager holds, on a
// shared store, for its read, change and write of the stored transports:
// without it two managers writing at once each wrote over the other's
// entries.
const transportsLock = "node-transports"

// writeTransport sets node id's entry of the stored transports to t (nil:
// removes it): it reads them, changes the entry and writes them back,
// holding transportsLock on a shared store (tried every 20 ms within
// ctx; its lease outlasts ctx's deadline by 2 s). A stored value that
// does not decode is replaced (logged). Errors: the store's, or ctx's
// while the lock is held by another manager.
func (m *Manager) writeTransport(ctx context.Context, id string, t *storedTransport) error {
	m.transportsMu.Lock()
	defer m.transportsMu.Unlock()
	if m.lead != nil {
		holder := m.holderID()
		// The lease outlasts every store call this write can still make
		// (ctx's deadline): run out mid-write, another manager could take
		// the lock and its entry be written over.
		ttl := 5 * time.Second
		if d, ok := ctx.Deadline(); ok {
			ttl = max(ttl, time.Until(d)+2*time.Second)
		}
		for {
			ok, err := m.lead.locker.TryLock(ctx, transportsLock, holder, ttl)
			if err != nil {
				return err
			}
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the stored transports' lock is held by another manager: %w", ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
		defer func() {
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _ = m.lead.locker.Unlock(uctx, transportsLock, holder)
		}()
	}
	st, err := readStateJSON(m, ctx, stateNodeTransports, "node transports", true, func() map[string]storedTransport { return map[string]storedTransport{} })
	if errors.Is(err, errMalformed) {
		m.log.Error("stored node transports malformed: written anew", "err", err)
		st, err = map[string]storedTransport{}, nil
	}
	if err != nil {
		return err
	}
	st = maps.Clone(st)
	if t != nil {
		st[id] = *t
	} else {
		delete(st, id)
	}
	return m.putStateJSON(ctx, stateNodeTransports, st)
}

// notRegisteredLocked returns, in id order, the nodes known from the store
// (their transports, stored at each registration and removed by a
// forget) that have not registered with this manager since it started:
// after a restart, down as far as it knows, as a node that stopped while
// it ran is listed (mu held). None on a standby, whose nodes report to the
// active manager.
func (m *Manager) notRegisteredLocked() []string {
	if m.standby() {
		return nil
	}
	var out []string
	for id := range m.knownTransports {
		if m.sched.Node(id) == nil {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return nodeIDLess(out[i], out[j]) })
	return out
}

// unseenNodeState is the state ListPlacement gives a pin to node id when
// the node is not registered with this manager: "not registered" for a
// node the store knows (it registered before this manager's start or
// takeover: notRegisteredLocked), "unknown node" for any other (mu held).
func (m *Manager) unseenNodeState(id string) string {
	if _, ok := m.knownTransports[id]; ok && !m.standby() {
		return "not registered"
	}
	return "unknown node"
}
