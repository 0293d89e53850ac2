package acm

import (
	"context"
	"maps"
	"slices"
)

// storeLostHint ends the log lines of state a store lost: what to do.
const storeLostHint = "did Redis restart without its data? run it with appendonly yes: deploy/README.md, Shared state"

// restoreLostOpLocked, at a takeover of a planner lock that no other
// manager held since this one did (keep; opMu held), writes back the
// operator's node settings and suspensions in force here when the store
// holds none of them (settings and susp, as just read): a Redis restarted
// without its data lost them, and applying its empty state undrained
// the nodes drained for maintenance without a word, and let suspended
// subscribers in. It returns what loadOpState applies: this manager's
// when they were restored (kept in force here also when the store
// refuses the write: node settings are then saved by the next renewals,
// saveUnsavedOp; a suspension at the next change). Each restore, or its
// failure, is logged.
func (m *Manager) restoreLostOpLocked(ctx context.Context, keep bool, settings map[string]nodeSetting, susp map[string]suspension) (map[string]nodeSetting, map[string]suspension) {
	if !keep {
		return settings, susp
	}
	m.mu.Lock()
	mine, mySusp := maps.Clone(m.nodeSettings), liveSuspensions(m.suspended, m.now())
	m.mu.Unlock()
	if len(settings) == 0 && len(mine) > 0 {
		settings = mine
		nodes := slices.Sorted(maps.Keys(mine))
		if err := m.putStateJSON(ctx, stateNodeSettings, mine); err != nil {
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
	if len(susp) == 0 && len(mySusp) > 0 {
		susp = mySusp
		users := slices.Sorted(maps.Keys(mySusp))
		if err := m.putStateJSON(ctx, stateSuspensions, mySusp); err != nil {
			m.log.Error("taking over: suspensions missing from the store not written again: kept in force here ("+storeLostHint+")", "users", users, "err", err)
		} else {
			m.log.Warn("taking over: suspensions missing from the store written again ("+storeLostHint+")", "users", users)
		}
	}
	return settings, susp
}
