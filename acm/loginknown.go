package acm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"vodcluster/acm/store"
)

// stateKnownLogins is the store's name of the login guard's known pairs
// (savedKnownLogins as JSON).
const stateKnownLogins = "known_logins"

// knownRefreshAfter is how often, at most, the table is saved for logins
// of pairs already known (a new pair has it saved at the next chance):
// the stored login of a pair that logs in hourly is at most about a day
// old, the table not written at every login.
const knownRefreshAfter = 24 * time.Hour

// savedKnownLogins is the stored table of known pairs: for each client
// address (as the guard keys it: an IPv6 /64) and user name, its last
// correct login, Unix seconds.
type savedKnownLogins struct {
	Pairs []savedKnownPair `json:"pairs"`
}

// savedKnownPair is one known pair of savedKnownLogins.
type savedKnownPair struct {
	Addr string `json:"addr"`
	User string `json:"user"`
	At   int64  `json:"at"`
}

// snapshotKnown returns the known pairs still within knownPairTTL of now
// as JSON when a pair became known since the last snapshot, or known
// pairs logged in again since one knownRefreshAfter or more before now;
// nil otherwise (a nil guard: nil).
func (g *loginGuard) snapshotKnown(now time.Time) []byte {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	if !g.knownDirty && (!g.knownTouched || now.Sub(g.knownSavedAt) < knownRefreshAfter) {
		g.mu.Unlock()
		return nil
	}
	g.knownDirty, g.knownTouched, g.knownSavedAt = false, false, now
	s := savedKnownLogins{Pairs: make([]savedKnownPair, 0, len(g.known))}
	for pair, at := range g.known {
		if now.Sub(at) >= knownPairTTL {
			continue
		}
		addr, user, _ := strings.Cut(pair, "\x00")
		s.Pairs = append(s.Pairs, savedKnownPair{Addr: addr, User: user, At: at.Unix()})
	}
	g.mu.Unlock()
	b, _ := json.Marshal(s) // strings and integers only
	return b
}

// restoreKnown adds the stored known pairs b to the guard's, a pair in
// both keeping its later login; pairs past knownPairTTL at now are left
// out, and the table stays within bucketTableMax (noteKnownLocked). An
// error when b does not decode or holds a pair without an address or a
// user name (nothing is restored then).
func (g *loginGuard) restoreKnown(b []byte, now time.Time) (int, error) {
	if g == nil {
		return 0, nil
	}
	var s savedKnownLogins
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, err
	}
	for i, p := range s.Pairs {
		if p.Addr == "" || p.User == "" || strings.Contains(p.Addr, "\x00") {
			return 0, fmt.Errorf("pair %d: no address or user name", i)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, p := range s.Pairs {
		at := time.Unix(p.At, 0)
		pair := p.Addr + "\x00" + p.User
		if now.Sub(at) >= knownPairTTL || at.After(now.Add(time.Minute)) || !at.After(g.known[pair]) {
			continue
		}
		g.noteKnownLocked(pair, at)
		n++
	}
	return n, nil
}

// saveKnownLogins writes the login guard's known pairs to the store when
// they changed since the last write (at most one write a PopularitySave;
// at Close), by deadline, on a shared store within the planner lock's
// lease (putLeaderState). A failed write is logged and tried again at the
// next.
func (m *Manager) saveKnownLogins(deadline time.Time) {
	b := m.logins.snapshotKnown(m.now())
	if b == nil {
		return
	}
	if err := m.putLeaderState(stateKnownLogins, b, deadline); err != nil {
		m.logins.markKnownDirty()
		m.log.Warn("known logins not saved: after a restart their addresses' first logins wait as strangers' do", "err", err)
	}
}

// markKnownDirty has the next snapshotKnown return the table.
func (g *loginGuard) markKnownDirty() {
	g.mu.Lock()
	g.knownDirty = true
	g.mu.Unlock()
}

// loadKnownLogins adds the stored known pairs to the login guard's (at
// Start, and when this manager takes over from another on a shared
// store). A table that cannot be read or does not decode is logged and
// left: the pairs are an aid, their addresses' first logins then wait as
// strangers' do, and nothing else waits on them.
func (m *Manager) loadKnownLogins(ctx context.Context) {
	if m.logins == nil {
		return
	}
	b, err := m.st.State(ctx, stateKnownLogins)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return
	case err != nil:
		m.log.Warn("known logins not read from the store: their addresses' first logins wait as strangers' do", "err", err)
		return
	}
	n, err := m.logins.restoreKnown(b, m.now())
	if err != nil {
		m.log.Warn("stored known logins malformed: not restored", "err", err)
		return
	}
	if n > 0 {
		m.log.Info("known logins restored", "pairs", n)
	}
}
