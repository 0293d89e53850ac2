package acm

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"vodcluster/acm/store"
	"vodcluster/proto/durtext"
)

// userLimited is the refusal of a subscriber at MaxSessionsPerUser with
// what the front door's answer says of it (the HTTP 429's body, the RTSP
// 403's reason): how many sessions the subscriber holds, how many of them
// are redirects its players have not taken up yet (admitted, the viewer
// not on its node: each ends as a no-show TokenTTL + NoShowGrace after
// its newest token unless its player arrives), and how long until enough
// of them, or of the HTTP sessions of the request's client going quiet,
// give way. It unwraps to errUserLimit, or to a retryLater with that wait
// when one is known (Retry-After over HTTP).
type userLimited struct {
	limit    int           // MaxSessionsPerUser
	sessions int           // live sessions counted at the limit
	queued   int           // requests of the subscriber waiting in the queue, counted with them
	waiting  int           // of sessions: redirects not taken up yet
	noShow   time.Duration // TokenTTL + NoShowGrace
	quiet    bool          // wait counts an HTTP session of the client that will have been quiet quietLeft
	// restored: wait counts a session loaded from the store (at the
	// manager's start or a takeover) whose node has not registered since,
	// which ends RestoreGrace after then unless its node does.
	restored bool
	loaded   int           // of sessions: loaded from the store, their node not registered since (restored)
	grace    time.Duration // RestoreGrace
	// tookOver: the manager became active by taking over from another
	// (Manager.tookOver): the sessions were loaded then, not at its start.
	tookOver bool
	wait     time.Duration // until enough sessions give way; 0: no time known
}

// Error is errUserLimit's text: the front door's answer (userLimitBody,
// userLimitReason) says the rest.
func (u userLimited) Error() string { return errUserLimit.Error() }

// Unwrap is a retryLater of errUserLimit with u's wait when one is known
// (the HTTP 429's Retry-After), else errUserLimit.
func (u userLimited) Unwrap() error {
	if u.wait > 0 {
		return retryLater{errUserLimit, u.wait}
	}
	return errUserLimit
}

// userLimitedLocked builds the refusal of user's request at limit (mu
// held): held counts the user's sessions and queued requests at the
// limit (skip, a session the request replaces, left out), need how many
// must give way for it, soon how long until each HTTP session of the
// request's client will have been quiet quietLeft. The user's redirects
// not taken up give way at their no-show, judged at the housekeeping
// tick after it; those on a node whose heartbeat stream broke are not
// counted at the limit, so do not free a slot. A session its node lists
// idle or quiet is no redirect not taken up (its player reached the
// node; its STARTED may not be applied yet): counted in need or soon by
// the caller, not again here. A session loaded from the store whose node
// has not registered since (restored, not reserved) never ends as a
// no-show: it gives way at the tick after its RestoreGrace (tick), and is
// counted so, not as a redirect.
func (m *Manager) userLimitedLocked(user string, held, limit, need int, soon []time.Duration, skip *session, now time.Time) userLimited {
	u := userLimited{limit: limit, queued: m.userPending[user], noShow: m.TokenTTL + m.NoShowGrace, grace: m.RestoreGrace, tookOver: m.tookOver}
	u.sessions = max(held-u.queued, 0)
	type free struct {
		in              time.Duration
		quiet, restored bool
	}
	frees := make([]free, 0, len(soon))
	for _, d := range soon {
		frees = append(frees, free{in: d, quiet: true})
	}
	tickEvery := max(m.sched.Config.HeartbeatInterval/2, 10*time.Millisecond)
	for _, s := range m.sessions {
		if s.User != user || s == skip || s.ended || s.uncounted {
			continue
		}
		if s.restored && !s.reserved {
			u.loaded++
			frees = append(frees, free{in: max(later(m.startedAt, s.orphaned).Add(m.RestoreGrace).Sub(now), 0) + tickEvery, restored: true})
			continue
		}
		if s.State != store.StateAdmitted || m.listedLocked(s) {
			continue
		}
		if n := m.sched.Node(s.Node); n != nil && n.Unreachable {
			continue
		}
		u.waiting++
		frees = append(frees, free{in: max(s.noShowFrom().Add(u.noShow).Sub(now), 0) + tickEvery})
	}
	if need > 0 && len(frees) >= need {
		slices.SortFunc(frees, func(a, b free) int { return cmp.Compare(a.in, b.in) })
		u.wait = max(frees[need-1].in, time.Second)
		for _, f := range frees[:need] {
			u.quiet = u.quiet || f.quiet
			u.restored = u.restored || f.restored
		}
	}
	return u
}

// listedLocked reports whether s's node lists it idle or quiet in its
// last report (mu held).
func (m *Manager) listedLocked(s *session) bool {
	ns := m.nodes[s.Node]
	if ns == nil {
		return false
	}
	_, idle := ns.idle[s.ID]
	_, quiet := ns.quiet[s.ID]
	return idle || quiet
}

// held says what the subscriber holds: "2 sessions", "1 session and 1
// request in the queue".
func (u userLimited) held() string {
	s := fmt.Sprintf("%d %s", u.sessions, plural(u.sessions, "session"))
	if u.queued > 0 {
		s += fmt.Sprintf(" and %d %s in the queue", u.queued, plural(u.queued, "request"))
	}
	return s
}

// retrySeconds is u's wait in whole seconds as Retry-After gives it (at
// least 1), 0 when no time is known.
func (u userLimited) retrySeconds() int {
	if u.wait <= 0 {
		return 0
	}
	return max(int(math.Ceil(u.wait.Seconds())), 1)
}

// since is when the manager loaded the sessions it holds from the store:
// "since it started", or "since it took over" (from the active manager,
// as a standby: tookOver).
func (u userLimited) since() string {
	if u.tookOver {
		return "since it took over"
	}
	return "since it started"
}

// userLimitBody is the text of the HTTP 429 of user at the session limit
// (u): what the user holds, what frees a slot, and when to ask again
// when a time is known (the Retry-After, in seconds).
func userLimitBody(user string, u userLimited) string {
	first := fmt.Sprintf("too many sessions: %s holds %s, the most allowed at once (max_sessions_per_user %d)", user, u.held(), u.limit)
	switch {
	case u.waiting == u.sessions && u.waiting > 0:
		first += fmt.Sprintf("; none started: each is a redirect to a node its player has not reached, which ends %s after it unless the player arrives", durtext.Written(u.noShow))
	case u.waiting > 0:
		first += fmt.Sprintf("; %d of them not started: redirects to a node their player has not reached, each ending %s after it unless the player arrives", u.waiting, durtext.Written(u.noShow))
	case u.loaded > 0:
		first += fmt.Sprintf("; %d of them on a node not registered with this manager %s, each ending %s after then (restore_grace) unless its node registers", u.loaded, u.since(), durtext.Written(u.grace))
	default:
		first += ", all started on their nodes"
	}
	if s := u.retrySeconds(); s > 0 {
		why := "a redirect not taken up ends"
		switch {
		case u.restored && !u.quiet && u.waiting == 0:
			why = "a session on a node not registered with this manager " + u.since() + " ends"
		case u.restored && !u.quiet:
			why = "a session gives way (one on a node not registered with this manager " + u.since() + ", or a redirect not taken up)"
		}
		if u.quiet {
			why = "a session gives way (an HTTP player at this address quiet for " + durtext.Written(quietLeft) + ", or a redirect not taken up)"
			if u.waiting == 0 {
				why = "an HTTP player at this address will have been quiet for " + durtext.Written(quietLeft) + " and gives way"
			}
		}
		// In the form of the durations before it ("1m10s"), the header's
		// seconds with it.
		return fmt.Sprintf("%s. Ask again in %s (Retry-After: %d), when %s.", first, durtext.Written(time.Duration(s)*time.Second), s, why)
	}
	return first + ". Stop a player first; a paused one, or an HTTP player between requests, gives way to the next request once silent longer than its node's session_timeout (60 s unless set)."
}

// userLimitReason is the RTSP 403's reason phrase for a subscriber at the
// session limit (err, errUserLimit or a userLimited): the HTTP 429's
// first words, with how many of the sessions are redirects not taken up
// and when the next of them ends.
func userLimitReason(err error) string {
	var u userLimited
	errors.As(err, &u)
	if u.waiting == 0 {
		return "Forbidden (too many sessions)"
	}
	if s := u.retrySeconds(); s > 0 && !u.quiet && !u.restored {
		return fmt.Sprintf("Forbidden (too many sessions: %d of %d not started, one ends within %d s unless its player arrives)", u.waiting, u.sessions, s)
	}
	return fmt.Sprintf("Forbidden (too many sessions: %d of %d not started)", u.waiting, u.sessions)
}
