package acm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"vodcluster/acm/store"
	"vodcluster/smm"
)

// State keys of the operator's node settings and eviction holds.
const (
	stateNodeSettings = "node-settings" // map node id -> nodeSetting as JSON
	stateEvictHolds   = "evict-holds"   // []smm.Hold as JSON
	statePolicy       = "sched-policy"  // storedPolicy as JSON
)

// storedPolicy is the scheduling policy the operator set at run time
// (SetPolicy), with the configured policy it replaced. A restarted
// manager (or the standby taking over) applies it while its configured
// policy is still that one; once the configuration names another policy
// (the operator edited it since), the configuration wins.
type storedPolicy struct {
	Policy     string `json:"policy"`
	Configured string `json:"configured"`
}

// nodeSetting is what the operator set on a node through SetNode, kept in
// the store so that a restarted manager (or the standby taking over)
// applies it when the node registers: a node drained by the operator
// stays drained (the node itself keeps refusing new sessions), a weight
// stays. Weight is nil and Overload 0 when the operator never set them.
// The entry goes when nothing is left in it (undrained, default overload,
// no weight ever set); an operator's weight stays until set again.
type nodeSetting struct {
	Draining bool    `json:"draining,omitempty"`
	Weight   *int    `json:"weight,omitempty"`
	Overload float64 `json:"overload,omitempty"`
}

// isZero reports whether s changes nothing (the entry can go).
func (s nodeSetting) isZero() bool { return !s.Draining && s.Weight == nil && s.Overload == 0 }

// errMalformed marks stored operator state that does not decode: loading
// drops it (logged), but nothing is written over it by a merge, which
// would lose the other entries.
var errMalformed = errors.New("stored operator state malformed")

// readNodeSettings returns the stored node settings (empty when none). A
// malformed value gives errMalformed when strict, else is logged and
// dropped: it only loses operators' settings, which SetNode can make
// again.
func (m *Manager) readNodeSettings(ctx context.Context, strict bool) (map[string]nodeSetting, error) {
	return readStateJSON(m, ctx, stateNodeSettings, "node settings", strict, func() map[string]nodeSetting { return map[string]nodeSetting{} })
}

// readStateJSON decodes the stored state name (what names it in errors
// and logs) into a value made by empty, which it returns as it is when
// nothing is stored or the stored value is JSON null (a nil map would
// panic at its first write). A value that does not decode gives
// errMalformed (wrapped) when strict, else is logged and dropped
// (empty()); an error of the store is returned wrapped.
func readStateJSON[T any](m *Manager, ctx context.Context, name, what string, strict bool, empty func() T) (T, error) {
	v := empty()
	b, err := m.st.State(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return v, nil
	case err != nil:
		var zero T
		return zero, fmt.Errorf("acm: load %s: %w", what, err)
	case bytes.Equal(bytes.TrimSpace(b), []byte("null")):
		return v, nil
	}
	if err := json.Unmarshal(b, &v); err != nil {
		if strict {
			var zero T
			return zero, fmt.Errorf("acm: stored %s: %w: %v", what, errMalformed, err)
		}
		m.log.Error("stored "+what+" malformed: dropped", "err", err)
		return empty(), nil
	}
	return v, nil
}

// readPolicy returns the stored scheduling policy, nil when none; a
// malformed value is logged and dropped.
func (m *Manager) readPolicy(ctx context.Context) (*storedPolicy, error) {
	b, err := m.st.State(ctx, statePolicy)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("acm: load scheduling policy: %w", err)
	}
	var p storedPolicy
	if err := json.Unmarshal(b, &p); err != nil || p.Policy == "" {
		m.log.Error("stored scheduling policy malformed: dropped", "err", err, "value", string(b))
		return nil, nil
	}
	return &p, nil
}

// savePolicy stores the scheduling policy the operator set, with the
// configured one (storedPolicy).
func (m *Manager) savePolicy(ctx context.Context, policy string) error {
	b, err := json.Marshal(storedPolicy{Policy: policy, Configured: m.configuredPolicy})
	if err != nil {
		return err
	}
	return m.st.PutState(ctx, statePolicy, b)
}

// readHolds returns the stored eviction holds (nil when none); a
// malformed value as readNodeSettings.
func (m *Manager) readHolds(ctx context.Context, strict bool) ([]smm.Hold, error) {
	return readStateJSON(m, ctx, stateEvictHolds, "eviction holds", strict, func() []smm.Hold { return nil })
}

// loadOpState reads the node settings, the suspended subscribers and, with a Replicator, the
// eviction holds and the operator's prefetch orders from the store (at Start and when taking over), applies
// the settings to the registered nodes and tells each node whose drain
// state this changes. keep (a takeover of a lock no other manager held
// since this one did: leader.kept) keeps the operator's changes in force
// here that the store did not take, and saves them (settleUnsavedOpLocked),
// and those the store lost (restoreLostOpLocked).
func (m *Manager) loadOpState(ctx context.Context, keep bool) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	settings, err := m.readNodeSettings(ctx, false)
	if err != nil {
		return err
	}
	var holds []smm.Hold
	if m.rep != nil {
		if holds, err = m.readHolds(ctx, false); err != nil {
			return err
		}
	}
	pol, err := m.readPolicy(ctx)
	if err != nil {
		return err
	}
	if err := m.loadPrefetchOrders(ctx); err != nil {
		return err
	}
	if err := m.loadEvictOrders(ctx); err != nil {
		return err
	}
	susp, err := m.readSuspensions(ctx, m.now())
	if err != nil {
		return err
	}
	settings, susp = m.restoreLostOpLocked(ctx, keep, settings, susp)
	pol, settings = m.settleUnsavedOpLocked(ctx, keep, pol, settings)
	m.noteStored(settings, susp)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.suspended = susp
	m.nodeSettings = settings
	for id := range m.nodes {
		m.applyNodeSettingLocked(id, false)
	}
	switch {
	case pol == nil:
	case pol.Configured != m.configuredPolicy:
		m.log.Info("scheduling policy set by an operator not restored: the configuration names another policy since",
			"stored", pol.Policy, "configured_then", pol.Configured, "configured", m.configuredPolicy)
	case m.sched.Policy().Name() == pol.Policy:
	default:
		if err := m.sched.SetPolicy(pol.Policy); err != nil {
			m.log.Error("stored scheduling policy not applied", "policy", pol.Policy, "err", err)
			break
		}
		m.log.Info("scheduling policy set by an operator restored (vodctl policy changes it)", "policy", pol.Policy, "configured", m.configuredPolicy)
	}
	if m.rep != nil {
		m.rep.RestoreHolds(holds)
	}
	return nil
}

// settleUnsavedOpLocked settles, at a takeover (opMu held), the operator's
// changes in force here that the store did not take (unsavedPolicy,
// unsavedNodes), given the stored policy pol and node settings just read;
// it returns what loadOpState applies. keep (this manager retook the lock
// that no other manager held since it did: after the store's outage):
// they stay in force and are saved now (logged; one the store refuses
// again stays in force, unsaved). Otherwise another manager held the
// lock meanwhile, and may have changed them: the stored ones win (the
// changes dropped are logged).
func (m *Manager) settleUnsavedOpLocked(ctx context.Context, keep bool, pol *storedPolicy, settings map[string]nodeSetting) (*storedPolicy, map[string]nodeSetting) {
	return m.saveUnsavedOpLocked(ctx, keep, "this manager retook its planner lock, which no other manager held meanwhile", slog.LevelError, pol, settings)
}

// saveUnsavedOpLocked is settleUnsavedOpLocked saying why the changes
// are saved now, and logging at failed a save the store refuses again.
func (m *Manager) saveUnsavedOpLocked(ctx context.Context, keep bool, why string, failed slog.Level, pol *storedPolicy, settings map[string]nodeSetting) (*storedPolicy, map[string]nodeSetting) {
	if !m.unsavedPolicy && len(m.unsavedNodes) == 0 {
		return pol, settings
	}
	nodes := slices.Sorted(maps.Keys(m.unsavedNodes))
	if !keep {
		m.log.Warn("operator's changes not saved dropped at the takeover: another manager held the planner lock meanwhile; the stored ones apply",
			"policy", m.unsavedPolicy, "nodes", nodes)
		m.unsavedPolicy, m.unsavedNodes = false, nil
		return pol, settings
	}
	if m.unsavedPolicy {
		m.mu.Lock()
		cur := m.sched.Policy().Name()
		m.mu.Unlock()
		pol = &storedPolicy{Policy: cur, Configured: m.configuredPolicy}
		if err := m.savePolicy(ctx, cur); err != nil {
			m.log.Log(ctx, failed, "store: scheduling policy set by an operator still not saved: kept in use here", "policy", cur, "err", err)
		} else {
			m.unsavedPolicy = false
			m.log.Info("scheduling policy set by an operator but not saved, saved now: "+why, "policy", cur)
		}
	}
	if len(nodes) > 0 {
		m.mu.Lock()
		for _, id := range nodes {
			if st, ok := m.nodeSettings[id]; ok {
				settings[id] = st
			} else {
				delete(settings, id)
			}
		}
		m.mu.Unlock()
		b, err := json.Marshal(settings)
		if err == nil {
			err = m.st.PutState(ctx, stateNodeSettings, b)
		}
		if err != nil {
			m.log.Log(ctx, failed, "store: node settings set by an operator still not saved: kept in force here", "nodes", nodes, "err", err)
		} else {
			m.noteStored(settings, nil)
			m.unsavedNodes = nil
			m.log.Info("node settings set by an operator but not saved, saved now: "+why, "nodes", nodes)
		}
	}
	return pol, settings
}

// saveUnsavedOp saves, on the holder of the planner lock (called after
// each renewal), the operator's changes in force here that the store did
// not take (SetPolicy, SetNode answered CHANGE_NOT_SAVED) once it answers
// again: holding the lock throughout, this manager is the one whose
// settings apply. It does nothing while opMu is taken (an operator's
// change or a reload: the next renewal tries again), or when nothing is
// left unsaved; a store still refusing them is logged at debug level (the
// change's own answer said so). ctx bounds the store calls.
func (m *Manager) saveUnsavedOp(ctx context.Context) {
	if !m.opMu.TryLock() {
		return
	}
	defer m.opMu.Unlock()
	if (!m.unsavedPolicy && len(m.unsavedNodes) == 0) || !m.Leader() {
		return
	}
	settings, err := m.readNodeSettings(ctx, true)
	if err != nil {
		m.log.Debug("store: operator's changes not saved still not saved: the stored node settings not read", "err", err)
		return
	}
	m.saveUnsavedOpLocked(ctx, true, "the store answers again, and this manager held its planner lock throughout", slog.LevelDebug, nil, settings)
}

// reloadNodeSetting reads node id's stored setting into nodeSettings: on
// a shared store another manager may have changed it since (Register on
// a standby).
func (m *Manager) reloadNodeSetting(ctx context.Context, id string) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	settings, err := m.readNodeSettings(ctx, false)
	if err != nil {
		return err
	}
	delete(m.unsavedNodes, id) // the stored setting wins (SetNode's answer said so)
	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := settings[id]; ok {
		m.nodeSettings[id] = st
	} else {
		delete(m.nodeSettings, id)
	}
	return nil
}

// applyNodeSettingLocked applies the operator's stored setting of node id
// to the scheduler (mu held; no setting: undrained, the default overload
// threshold), at registration and after loading, and sends the node a
// DrainCommand when its drain state changed, or when always is true
// (registration) and the node drains or has a setting: a node clears its
// own drain flag when it registers, so it hears a drain again.
func (m *Manager) applyNodeSettingLocked(id string, always bool) {
	n := m.sched.Node(id)
	if n == nil {
		return
	}
	was := n.Draining
	st, ok := m.nodeSettings[id] // none: undrained, the default overload threshold
	if st.Weight != nil {
		if err := m.sched.SetWeight(id, *st.Weight); err != nil {
			m.log.Warn("stored node weight not applied: set it again", "node", id, "err", err)
		}
	}
	if err := m.sched.SetOverload(id, st.Overload); err != nil {
		m.log.Warn("stored node overload threshold not applied: set it again", "node", id, "err", err)
	}
	_ = m.sched.SetDraining(id, st.Draining)
	if n.Draining != was || (always && (ok || n.Draining)) {
		if ns := m.nodes[id]; ns != nil {
			setDrainLocked(ns, n.Draining) // apart from its queue, which may be full
		}
	}
}

// changeNodeSettingOpLocked applies change to node id's stored setting
// (opMu held): read the stored settings, change that one entry's fields,
// write them back, so that managers sharing a store keep each other's
// entries and fields. It returns the new entry and whether the store had
// one before. When the store cannot be read (it is down), the change is
// made to this manager's copy and the error returned.
func (m *Manager) changeNodeSettingOpLocked(ctx context.Context, id string, change func(*nodeSetting)) (nodeSetting, bool, error) {
	stored, err := m.readNodeSettings(ctx, true)
	if err != nil {
		m.mu.Lock()
		st, had := m.nodeSettings[id]
		m.mu.Unlock()
		change(&st)
		return st, had, err
	}
	st, had := stored[id]
	change(&st)
	if st.isZero() {
		delete(stored, id)
	} else {
		stored[id] = st
	}
	b, err := json.Marshal(stored)
	if err == nil {
		err = m.st.PutState(ctx, stateNodeSettings, b)
	}
	if err == nil {
		m.noteStored(stored, nil)
	}
	return st, had, err
}

// saveHoldOpLocked writes the eviction hold of title on node as the
// Replicator has it now (added, or removed when it no longer holds) into
// the stored holds (opMu held); expired holds are dropped on the way.
// ctx bounds the read and the write (an operator's call: adminStoreWait).
func (m *Manager) saveHoldOpLocked(ctx context.Context, node, title string) error {
	if m.rep == nil {
		return nil
	}
	stored, err := m.readHolds(ctx, true)
	if err != nil {
		return err
	}
	m.mu.Lock()
	now := m.now()
	var mine *smm.Hold
	for _, h := range m.rep.Holds(now) {
		if h.Node == node && h.Title == title {
			mine = &h
		}
	}
	m.mu.Unlock()
	out := stored[:0]
	for _, h := range stored {
		if (h.Node != node || h.Title != title) && now.Before(h.Until) {
			out = append(out, h)
		}
	}
	if mine != nil {
		out = append(out, *mine)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return m.st.PutState(ctx, stateEvictHolds, b)
}
