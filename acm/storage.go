package acm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// Names of the storage manager's state in the Store.
const (
	statePins       = "pins"       // smm.Pins as JSON
	statePopularity = "popularity" // smm.PopularityState as JSON
)

// secondsPerDay turns a popularity hint (requests per day) into a rate.
const secondsPerDay = 86400

// newStorage builds the storage policy named by Evictor with its planner.
func (m *Manager) newStorage() error {
	cfg := smm.StorageConfig{Planner: m.StoragePlanner, Replicator: m.Replicator}
	custom, _ := m.Planner.(*smm.Replicator)
	if m.Planner != nil {
		// The given planner plans; the policy only lends its evictors.
		cfg.Planner = smm.PlannerNone
		if custom != nil {
			cfg.Pins = custom.Pins()
		}
	}
	st, err := smm.NewStorage(m.Evictor, cfg)
	if err != nil {
		return fmt.Errorf("acm: storage policy: %w", err)
	}
	m.storage, m.pins = st, st.Pins()
	m.planner, m.rep = st.Planner, st.Replicator
	if m.Planner != nil {
		m.planner, m.rep = m.Planner, custom
	}
	return nil
}

// plannerName is the planner in use, for logs and PolicyInfo.
func (m *Manager) plannerName() string {
	switch {
	case m.rep != nil:
		return smm.PlannerReplicate
	case m.Planner != nil:
		return fmt.Sprintf("%T", m.Planner)
	}
	return smm.PlannerNone
}

// restoreStorage loads the operator's pins and the popularity snapshot
// from the store at Start, then applies the catalog's popularity hints,
// and loads the login guard's known pairs (loadKnownLogins).
// Malformed pins fail Start (a pin silently lost could let a pinned title
// be evicted); a malformed popularity snapshot is logged and dropped.
func (m *Manager) restoreStorage() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := m.st.State(ctx, statePins)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fmt.Errorf("acm: load pins: %w", err)
	default:
		if err := m.pins.UnmarshalJSON(b); err != nil {
			return fmt.Errorf("acm: stored pins: %w", err)
		}
		if n := m.pins.Len(); n > 0 {
			m.log.Info("pins restored", "pins", n)
		}
	}
	if m.rep != nil {
		b, err := m.st.State(ctx, statePopularity)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return fmt.Errorf("acm: load popularity: %w", err)
		default:
			m.restorePopularity(b)
		}
	}
	m.applyHints()
	m.loadKnownLogins(ctx)
	return nil
}

// savedPopularity is the stored popularity snapshot: the Replicator's
// state with the half-lives it was taken under, seconds, and the
// catalog's hints it had applied (title -> requests a day), so that a
// restart does not apply them again.
type savedPopularity struct {
	HalfLifeS     float64             `json:"half_life_s"`
	RankHalfLifeS float64             `json:"rank_half_life_s"`
	State         smm.PopularityState `json:"state"`
	Hints         map[string]float64  `json:"hints,omitempty"`
}

// restorePopularity loads a stored snapshot into the Replicator. An entry's
// weight is a count decayed with the half-life of its time, so a snapshot
// taken under another half-life is rescaled by new/old half-life: the
// request rates stay what they were. A malformed snapshot is logged and
// dropped (popularity is learnt again from requests).
func (m *Manager) restorePopularity(b []byte) {
	var saved savedPopularity
	if err := json.Unmarshal(b, &saved); err != nil {
		m.log.Warn("stored popularity snapshot malformed: starting without it", "err", err)
		return
	}
	ps := saved.State
	cfg := m.rep.Config()
	scale := func(es []smm.PopularityEntry, from float64, to time.Duration) []smm.PopularityEntry {
		if !(from > 0) || math.IsInf(from, 0) || from == to.Seconds() {
			return es
		}
		out := make([]smm.PopularityEntry, len(es))
		for i, e := range es {
			e.Weight *= to.Seconds() / from
			out[i] = e
		}
		return out
	}
	ps.Demand = scale(ps.Demand, saved.HalfLifeS, cfg.HalfLife)
	ps.Rank = scale(ps.Rank, saved.RankHalfLifeS, cfg.RankHalfLife)
	if err := m.rep.RestorePopularity(ps); err != nil {
		m.log.Warn("stored popularity snapshot rejected: starting without it", "err", err)
		return
	}
	for id, h := range saved.Hints {
		if h > 0 && !math.IsInf(h, 0) {
			// Applied before, and what the title's requests made of it
			// since is in the snapshot: not applied again (applyHints)
			// unless the catalog's hint changed.
			m.seeded[id] = h
		}
	}
	if !ps.At.IsZero() {
		m.popRestoredMs.Store(ps.At.UnixMilli())
	}
	m.log.Info("popularity restored", "titles", len(ps.Demand), "taken", ps.At)
}

// savePopularity writes the Replicator's popularity snapshot to the store
// by deadline, on a shared store within the planner lock's lease
// (putLeaderState). A failed write is logged.
func (m *Manager) savePopularity(deadline time.Time) {
	if m.rep == nil {
		return
	}
	m.mu.Lock()
	cfg := m.rep.Config()
	saved := savedPopularity{HalfLifeS: cfg.HalfLife.Seconds(), RankHalfLifeS: cfg.RankHalfLife.Seconds(),
		State: m.rep.SnapshotPopularity(m.now()), Hints: maps.Clone(m.seeded)}
	m.mu.Unlock()
	b, err := json.Marshal(saved)
	if err == nil {
		err = m.putLeaderState(statePopularity, b, deadline)
	}
	if err != nil {
		m.log.Warn("popularity snapshot not saved", "err", err)
		return
	}
	m.popSavedMs.Store(saved.State.At.UnixMilli())
}

// applyHints feeds the catalog's popularity hints (expected requests per
// day) to the Replicator as priors (Replicator.Seed). A hint is applied
// once, and again when it changes: the popularity snapshot records the
// hints applied (savedPopularity.Hints), so a restart or a takeover does
// not raise again a rate that decayed below its hint since. It only
// raises a title's rate: what the title's own requests (or the restored
// snapshot) show, when higher, stands. Plans at once when a hint took
// effect.
func (m *Manager) applyHints() {
	if m.rep == nil {
		return
	}
	cat := m.titles()
	now := m.now()
	seeded := 0
	m.mu.Lock()
	for id, h := range m.seeded {
		if t, ok := cat[id]; !ok || t.PopularityPerDay != h {
			delete(m.seeded, id)
		}
	}
	for id, t := range cat {
		h := t.PopularityPerDay
		if !(h > 0) || math.IsInf(h, 0) || m.seeded[id] == h {
			continue
		}
		m.seeded[id] = h
		rate := h / secondsPerDay
		if m.rep.Popularity().Rate(id, now) >= rate {
			continue
		}
		if err := m.rep.Seed(id, rate, now); err != nil {
			m.log.Warn("popularity hint not applied", "title", id, "per_day", h, "err", err)
			continue
		}
		seeded++
	}
	m.mu.Unlock()
	if seeded > 0 {
		m.log.Info("popularity hints applied", "titles", seeded)
		m.kickPlan()
	}
}

// recordLocked notes one request for t placed on ns: the node's hit count
// and its Evictor's history (smm.Recorder).
func (m *Manager) recordLocked(ns *nodeState, t store.Title, now time.Time) {
	ns.addHit(t.ID)
	if r, ok := m.storage.Evictor(ns.id).(smm.Recorder); ok {
		r.Record(t.ID, t.SizeBytes, now)
	}
}

// sessionEndedLocked tells the Replicator how long a playing session
// lasted, to learn mean session lengths (expected demand).
func (m *Manager) sessionEndedLocked(s *session, at time.Time) {
	if m.rep == nil || s.StartedAt.IsZero() || at.Before(s.StartedAt) {
		return
	}
	m.rep.SessionEnded(s.Title, at.Sub(s.StartedAt).Seconds(), m.titles()[s.Title].DurationS, at)
}

// protectedOn returns the titles pinned to node or to the cluster, sorted.
func (m *Manager) protectedOn(node string) []string {
	out := append(m.pins.NodePins(node), m.pins.ClusterPins()...)
	slices.Sort(out)
	return slices.Compact(out)
}

// sendProtectLocked tells ns which titles its own eviction must never
// remove (ProtectCommand) when that changed since the last command, and at
// every registration (register), none included: the node keeps the last
// set it received, and this manager is the authority on it. A node that
// restarted knows none; one whose last protect command (the unpin of its
// last title) was lost with a broken stream, or was never sent because
// the manager that had it queued stopped (a restart, a standby taking
// over, whose nodeState is new), or one forgotten (vodctl node forget)
// and back, would otherwise keep titles protected that are no longer
// pinned, its own eviction never removing them. The command goes in the
// node's pins slot (nodeState.pins), not in its bounded queue: it
// replaces a protect command not yet sent (an older pin set), is never
// refused for a full queue, and goes before the queued commands, so that
// at registration the node knows its pins before the commands queued
// while it was away and the prefetches sent again (a restarted node
// making room for one of those fills would otherwise know no pin). mu
// held.
func (m *Manager) sendProtectLocked(ns *nodeState, register bool) {
	p := m.protectedOn(ns.id)
	if slices.Equal(p, ns.protected) && !register {
		return
	}
	setPinsLocked(ns, p)
}

// setPinsLocked makes the ProtectCommand of p (ns's pins as they are) the
// one the node's stream sends next, before its queued commands, in place
// of one not yet sent (mu held).
func setPinsLocked(ns *nodeState, p []string) {
	ns.pins = protectCmd(p)
	ns.protected = p
	ns.signal()
}

// isProtect reports whether c is a ProtectCommand.
func isProtect(c *pb.NodeCommand) bool { return c.GetProtect() != nil }
