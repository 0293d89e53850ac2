package acm

import (
	"context"
	"time"

	"vodcluster/acm/store"
)

// undoneKeep is how long the manager remembers a session whose admission
// it undid (undoLocked), for loadSessions to tell its entry from a live
// session's: well past a stalled store's return, when the entry may be
// written and read back.
const undoneKeep = 10 * time.Minute

// maxUndone bounds the admissions undone remembered at once (the oldest
// go first): a store that stalls under a crowd of requests refuses most
// of them without a store call (persistFront), so without an entry.
const maxUndone = 4096

// undoLocked ends s, whose admission is undone before its viewer was
// sent to the node (the store did not take its write, the client left,
// the node has no HTTP address; mu held), and remembers its id for
// undoneKeep: a session write the store took while it stalled is made
// when it resumes (a Redis stopped and continued runs the commands
// waiting in its sockets), and a load of the store's sessions (a
// takeover, a node's registration) that read the entry before the
// manager deleted it added it back to the table, as an admitted session
// no viewer would ever reach: it held its node's bandwidth and a
// reserved fill, counted against the subscriber's session limit, and
// ended as a no-show minutes later with a second record.
func (m *Manager) undoLocked(s *session, why string) {
	m.endLocked(s, why)
	now := m.now()
	if m.undone == nil {
		m.undone = map[string]time.Time{}
	}
	for len(m.undoneOrder) > 0 && (len(m.undoneOrder) >= maxUndone || now.Sub(m.undone[m.undoneOrder[0]]) > undoneKeep) {
		delete(m.undone, m.undoneOrder[0])
		m.undoneOrder = m.undoneOrder[1:]
	}
	m.undone[s.ID] = now
	m.undoneOrder = append(m.undoneOrder, s.ID)
}

// undoneLocked reports whether st is the entry of a session whose
// admission this manager undid (undoLocked; mu held).
func (m *Manager) undoneLocked(st store.Session) bool {
	at, ok := m.undone[st.ID]
	return ok && m.now().Sub(at) <= undoneKeep
}

// noShowLocked ends s, admitted and its viewer not on its node past its
// no-show deadline (tick; mu held), and remembers its id with the start
// of its no-show clock for undoneKeep: its store entry's delete may wait
// for the store's return (a stall), and a load of the store's sessions
// before it (the takeover at the planner lock's retake, a node's
// registration) added the session back to the table as a new one, the
// viewer's token long expired: held its node's bandwidth and a slot of
// its subscriber's, and ended as a no-show a second time, with a second
// record, as late as RestoreGrace after that load when its node was not
// alive then (the wait restarted from the load).
func (m *Manager) noShowLocked(s *session) {
	m.endLocked(s, "no-show")
	m.noShows.add(s.ID, s.noShowFrom(), m.now(), undoneKeep+m.TokenTTL+m.NoShowGrace, maxUndone)
}

// noShownLocked reports whether st is the entry, as it was at the end, of
// a session this manager ended as a no-show (noShowLocked; mu held): not
// started, and no newer token given its viewer since (the viewer asking
// another manager's front door again restarts its no-show there).
func (m *Manager) noShownLocked(st store.Session) bool {
	from, ok := m.noShows.at[st.ID]
	return ok && st.State == store.StateAdmitted && !later(st.AdmittedAt, st.TokenAt).After(from)
}

// ghost is a store entry a load of the store's sessions does not load
// (loadSessions): a session this manager undid or ended as a no-show,
// whose entry was read back before its delete was made.
type ghost struct {
	st     store.Session
	noShow bool // ended as a no-show; else its admission was undone
}

// deleteUndone deletes the store's entries of sessions whose admission
// this manager undid, or that it ended as no-shows, found by a load of
// the store's sessions (loadSessions), as the manager's delete of them
// would have (deleteOwn: only while this manager holds them).
func (m *Manager) deleteUndone(ctx context.Context, ghosts []ghost) {
	for _, g := range ghosts {
		err := m.deleteOwn(ctx, g.st, "")
		m.noteStoreWrite(err)
		msg := "store: the entry of a session whose admission was undone here (written when the store resumed) was read back: not loaded; deleted unless another manager holds it"
		if g.noShow {
			msg = "store: the entry of a session ended here as a no-show (its delete waiting for the store) was read back: not loaded again; deleted unless another manager holds it"
		}
		m.log.Warn(msg, "session", g.st.ID, "title", g.st.Title, "user", g.st.User, "err", err)
	}
}
