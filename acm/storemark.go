package acm

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"vodcluster/acm/store"
	"vodcluster/smm"
)

// stateStoreMark is the state key of the store's mark (storeMark), which a
// manager writes into a store that has none: at its start, and when it
// takes the planner lock. Found missing at a takeover, it says the store
// lost its data since this manager started (a Redis restarted without
// appendonly, flushed, or a replica promoted without the data), rather
// than another manager having cleared the operator's settings.
const stateStoreMark = "store-mark"

// storeMark is the value at stateStoreMark: who wrote it and when.
type storeMark struct {
	Manager string    `json:"manager"`
	At      time.Time `json:"at"`
}

// markStore writes the store's mark when it has none, and reports whether
// it had none. Errors: the store's (the mark is then neither read nor
// written).
func (m *Manager) markStore(ctx context.Context) (missing bool, err error) {
	_, err = m.st.State(ctx, stateStoreMark)
	switch {
	case err == nil:
		m.storeMarked.Store(true)
		return false, nil
	case !errors.Is(err, store.ErrNotFound):
		return false, err
	}
	b, err := json.Marshal(storeMark{Manager: m.holderID(), At: m.now()})
	if err == nil {
		err = m.st.PutState(ctx, stateStoreMark, b)
	}
	if err == nil {
		m.storeMarked.Store(true)
	}
	return true, err
}

// storeLost reports whether the store's mark that this manager saw or
// wrote is gone: the store lost its data, and no manager has taken the
// planner lock since (a takeover writes the mark again). False when the
// store does not answer.
func (m *Manager) storeLost(ctx context.Context) bool {
	if !m.storeMarked.Load() {
		return false
	}
	_, err := m.st.State(ctx, stateStoreMark)
	return errors.Is(err, store.ErrNotFound)
}

// storeLostAtTakeover checks, when this manager takes the planner lock,
// whether the store lost its data since this manager started (the mark it
// saw or wrote is gone: markStore). When it did and this manager was the lock's last
// holder (kept: no other manager held it since, so no other changed the
// operator's settings), the operator's state in force here is written
// back (writeBackOpState), which the reload of the takeover then reads
// as it is: it replaced it with the empty store's, undraining the nodes
// an operator drained, lifting the suspensions, dropping the pins, the
// eviction holds and a policy set with vodctl, here and on the standby
// taking over later. Otherwise that state is lost (logged, to be set
// again).
func (m *Manager) storeLostAtTakeover(ctx context.Context, kept bool) {
	marked := m.storeMarked.Load() // else not written at the start: missing says nothing
	missing, err := m.markStore(ctx)
	lost := missing && marked
	switch {
	case err != nil:
		m.log.Error("taking over: the store's mark not checked (did the store lose its data?)", "err", err)
		return
	case !lost:
		return
	case !kept:
		m.log.Error("taking over: the store lost its data (a Redis restarted without appendonly yes?), and another manager may have held the planner lock since: the operator's node settings, suspensions, pins, eviction holds and scheduling policy stored there are gone; set them again (vodctl)")
		return
	}
	if err := m.writeBackOpState(ctx); err != nil {
		m.log.Error("taking over: the store lost its data (a Redis restarted without appendonly yes?), and the operator's state in force here was not all written back: set it again (vodctl)", "err", err)
		return
	}
}

// writeBackOpState writes the operator's state in force here into the
// store, over what it holds: the node settings (drain, weight, overload),
// the suspensions in force, the pins, the eviction holds, the scheduling
// policy when an operator set one other than the configured, and the
// popularity snapshot. It is for a store that lost its data
// (storeLostAtTakeover); the prefetch orders waiting and the forgotten
// nodes' records are not written back (this manager carries out its
// orders; the forgotten nodes are forgotten here). Errors: the first of
// the store's, after trying every write.
func (m *Manager) writeBackOpState(ctx context.Context) error {
	m.pinsMu.Lock()
	defer m.pinsMu.Unlock()
	m.opMu.Lock()
	defer m.opMu.Unlock()
	now := m.now()
	m.mu.Lock()
	settings := make(map[string]nodeSetting, len(m.nodeSettings))
	for id, st := range m.nodeSettings {
		if !st.isZero() {
			settings[id] = st
		}
	}
	susp := liveSuspensions(m.suspended, now)
	var holds []smm.Hold
	if m.rep != nil {
		holds = m.rep.Holds(now)
	}
	pins, perr := json.Marshal(m.pins)
	policy := m.sched.Policy().Name()
	m.mu.Unlock()

	var errs []error
	put := func(name string, v any) {
		if err := m.putStateJSON(ctx, name, v); err != nil {
			errs = append(errs, err)
		}
	}
	if len(settings) > 0 {
		put(stateNodeSettings, settings)
	}
	if len(susp) > 0 {
		put(stateSuspensions, susp)
	}
	if len(holds) > 0 {
		put(stateEvictHolds, holds)
	}
	if perr != nil {
		errs = append(errs, perr)
	} else if err := m.st.PutState(ctx, statePins, pins); err != nil {
		errs = append(errs, err)
	}
	if policy != m.configuredPolicy {
		if err := m.savePolicy(ctx, policy); err != nil {
			errs = append(errs, err)
		}
	}
	m.savePopularity()
	m.log.Warn("taking over: the store lost its data since this manager last held the planner lock (a Redis restarted without appendonly yes?): the operator's state in force here written back",
		"node_settings", len(settings), "suspensions", len(susp), "eviction_holds", len(holds), "policy", policy, "written", len(errs) == 0)
	return errors.Join(errs...)
}
