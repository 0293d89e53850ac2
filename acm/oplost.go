package acm

import (
	"context"
	"maps"
	"slices"
)

// storeLostHint ends the log lines of state a store lost: what to do.
const storeLostHint = "did Redis restart without its data? run it with appendonly yes: deploy/README.md, Shared state"

// noteStored records settings and susp (each when not nil) as what the
// store holds now, written or read by this manager (opMu held): what
// restoreLostOpLocked puts back if the store loses them.
func (m *Manager) noteStored(settings map[string]nodeSetting, susp map[string]suspension) {
	if settings != nil {
		m.storedSettings = maps.Clone(settings)
	}
	if susp != nil {
		m.storedSusp = maps.Clone(susp)
	}
}

// restoreLostOpLocked, at a takeover of a planner lock that no other
// manager held since this one did (keep; opMu held; store.Locker.TakeLock
// says so also when the store lost its record of holders), puts back
// into settings and susp, as just read from the store, the node settings
// and suspensions (still in force) this manager last knew stored
// (noteStored) that the store no longer holds, and writes them: a Redis
// restarted without its data lost them, and applying its empty state
// undrained the nodes drained for maintenance without a word, and let
// suspended subscribers in. It returns what loadOpState goes on with.
// Each restore is logged at warn; a write the store refuses at error,
// the entries kept in force here all the same (node settings are saved
// by a later renewal, saveUnsavedOp; suspensions with the next change).
func (m *Manager) restoreLostOpLocked(ctx context.Context, keep bool, settings map[string]nodeSetting, susp map[string]suspension) (map[string]nodeSetting, map[string]suspension) {
	if !keep {
		return settings, susp
	}
	var nodes []string
	for id, st := range m.storedSettings {
		if _, ok := settings[id]; !ok {
			settings[id] = st
			nodes = append(nodes, id)
		}
	}
	if len(nodes) > 0 {
		slices.Sort(nodes)
		if err := m.putStateJSON(ctx, stateNodeSettings, settings); err != nil {
			if m.unsavedNodes == nil {
				m.unsavedNodes = map[string]bool{}
			}
			for _, id := range nodes {
				m.unsavedNodes[id] = true
			}
			m.log.Error("taking over: node settings missing from the store not written again: kept in force here ("+storeLostHint+")", "nodes", nodes, "err", err)
		} else {
			m.log.Warn("taking over: node settings missing from the store written again ("+storeLostHint+")", "nodes", nodes)
		}
	}
	var users []string
	for u, s := range liveSuspensions(m.storedSusp, m.now()) {
		if _, ok := susp[u]; !ok {
			susp[u] = s
			users = append(users, u)
		}
	}
	if len(users) > 0 {
		slices.Sort(users)
		if err := m.putStateJSON(ctx, stateSuspensions, susp); err != nil {
			m.log.Error("taking over: suspensions missing from the store not written again: kept in force here ("+storeLostHint+")", "users", users, "err", err)
		} else {
			m.log.Warn("taking over: suspensions missing from the store written again ("+storeLostHint+")", "users", users)
		}
	}
	return settings, susp
}
