package acm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"vodcluster/acm/store"
	"vodcluster/smm"
)

// State keys of the operator's node settings and eviction holds.
const (
	stateNodeSettings = "node-settings" // map node id -> nodeSetting as JSON
	stateEvictHolds   = "evict-holds"   // []smm.Hold as JSON
)

// nodeSetting is what the operator set on a node through SetNode, kept in
// the store so that a restarted manager (or the standby taking over)
// applies it when the node registers: a node drained by the operator
// stays drained (the node itself keeps refusing new sessions), a weight
// stays. Weight is nil and Overload 0 when the operator never set them.
type nodeSetting struct {
	Draining bool    `json:"draining,omitempty"`
	Weight   *int    `json:"weight,omitempty"`
	Overload float64 `json:"overload,omitempty"`
}

// loadOpState reads the node settings and, with a Replicator, the
// eviction holds from the store (at Start and when taking over). A
// malformed entry is logged and dropped: it only loses an operator's
// setting, which SetNode can make again.
func (m *Manager) loadOpState(ctx context.Context) error {
	settings := map[string]nodeSetting{}
	b, err := m.st.State(ctx, stateNodeSettings)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("acm: load node settings: %w", err)
	default:
		if err := json.Unmarshal(b, &settings); err != nil {
			m.log.Error("stored node settings malformed: dropped", "err", err)
			settings = map[string]nodeSetting{}
		}
	}
	var holds []smm.Hold
	if m.rep != nil {
		b, err := m.st.State(ctx, stateEvictHolds)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("acm: load eviction holds: %w", err)
		default:
			if err := json.Unmarshal(b, &holds); err != nil {
				m.log.Error("stored eviction holds malformed: dropped", "err", err)
				holds = nil
			}
		}
	}
	m.mu.Lock()
	m.nodeSettings = settings
	for id := range m.nodes {
		m.applyNodeSettingLocked(id)
	}
	if m.rep != nil {
		m.rep.RestoreHolds(holds)
	}
	m.mu.Unlock()
	return nil
}

// applyNodeSettingLocked applies the operator's stored setting of node id
// to the scheduler (mu held), at registration and after loading.
func (m *Manager) applyNodeSettingLocked(id string) {
	st, ok := m.nodeSettings[id]
	if !ok || m.sched.Node(id) == nil {
		return
	}
	if st.Weight != nil {
		_ = m.sched.SetWeight(id, *st.Weight)
	}
	if st.Overload > 0 {
		_ = m.sched.SetOverload(id, st.Overload)
	}
	_ = m.sched.SetDraining(id, st.Draining)
}

// saveOpState writes the node settings and the eviction holds to the
// store. opMu keeps the writes in the order of the changes; a failure is
// logged (the setting holds in this manager until it restarts).
func (m *Manager) saveOpState() {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	m.mu.Lock()
	settings, err := json.Marshal(m.nodeSettings)
	var holds []byte
	if err == nil && m.rep != nil {
		holds, err = json.Marshal(m.rep.Holds(m.now()))
	}
	m.mu.Unlock()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = m.st.PutState(ctx, stateNodeSettings, settings)
		if err == nil && holds != nil {
			err = m.st.PutState(ctx, stateEvictHolds, holds)
		}
		cancel()
	}
	if err != nil {
		m.log.Error("store: node settings or eviction holds not saved: a restart forgets the last change", "err", err)
	}
}
