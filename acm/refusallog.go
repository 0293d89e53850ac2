package acm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"vodcluster/proto/durtext"
)

// capacityNote is how often at most the front door logs a line for its
// capacity refusals of one reason above debug: the first refusal of a
// reason is logged in full at its level, the next ones at debug, and one
// summary line per capacityNote gives how many were refused meanwhile.
// In a flash crowd a line per refusal was thousands of lines a second;
// vodcluster_frontdoor_requests_total counts every refusal all the same.
const capacityNote = 10 * time.Second

// Reasons of capacity refusals at the front door, and of refused logins
// (a password guesser sends them as fast as it can), each collapsed on its
// own in the log (refusalNotes).
const (
	refusedNoBandwidth     = "no bandwidth"                     // no node has headroom within the queue deadline (errNoBandwidth)
	refusedNoDiskRoom      = "no disk room"                     // no node that could take it has disk room for the title (errNoDiskRoom)
	refusedOriginChannels  = "origin channels busy"             // no node holds the title, every origin channel taken by fills (storage.origin_channels)
	refusedNoNodeInService = "no node in service"               // every node that could take it is drained or at weight 0 (errNoNodeInService)
	refusedNoNodeReporting = "no node reporting"                // no node alive or dead within restore_grace (errNoNodeReporting)
	refusedNodesOutOfTouch = "nodes out of touch"               // every node that could take it dead within restore_grace or unreachable, at the queue deadline (errNodesOutOfTouch)
	refusedOriginDown      = "origin unavailable"               // the origin is down and no node the viewer may use has the title (errOriginDown)
	refusedNoSource        = "no source"                        // no node the viewer may use holds the title and none has an origin (errNoSource)
	refusedStoreDown       = "store unavailable"                // the store failed or did not answer within store_timeout, and no health check read it since (errStoreDown)
	refusedOverEgress      = "bitrate over every node's egress" // the title's bitrate is more than any node the viewer may use can stream (errOverEgress)
	refusedTransport       = "unsupported transport"            // a SETUP whose Transport no node serves, or with none (setupTransportRefusal)
	refusedLogins          = "too many failed logins"           // the client's address ran out of failed logins, for the user name or over all (errThrottled)
	refusedCredentials     = "wrong credentials"                // the BOSS refused the user name and password (errUnauthorized)
)

// refusalNotes collapses the log lines of the front door's refusals per
// reason (capacityNote), and for refused logins per reason and client
// address (logFrom). Safe for concurrent use; its zero value is ready to
// use.
type refusalNotes struct {
	mu sync.Mutex
	by map[string]*refusalWindow // reason, or "<reason> from <client>" -> its window
}

// maxRefusalWindows bounds the windows of refusalNotes: logins refused
// from more client addresses at once than this share one window per
// reason ("from other addresses").
const maxRefusalWindows = 4096

// maxWindowUsers is how many user names a window of refused logins
// lists in its summary; the others are counted.
const maxWindowUsers = 8

// refusalWindow is the current capacityNote window of one reason (and
// client): since when, the level of its lines, how many refusals were
// logged at debug in it, and for logins the user names they were for.
type refusalWindow struct {
	start     time.Time
	level     slog.Level
	held      int
	users     []string // distinct, at most maxWindowUsers
	moreUsers int      // distinct user names past those
}

// reset opens w's next window at now, its lines at level.
func (w *refusalWindow) reset(now time.Time, level slog.Level) {
	*w = refusalWindow{start: now, level: level}
}

// addUser records user (not "") among the users of w's refusals.
func (w *refusalWindow) addUser(user string) {
	if user == "" || slices.Contains(w.users, user) {
		return
	}
	if len(w.users) < maxWindowUsers {
		w.users = append(w.users, user)
		return
	}
	w.moreUsers++ // a name past the list may be counted twice: a summary's estimate
}

// summaryLocked logs how many refusals w held (logged at debug) for
// label (a reason, or "<reason> from <client>") by now, and the user
// names of refused logins.
func summaryLocked(l *slog.Logger, label string, w *refusalWindow, now time.Time) {
	over := now.Sub(w.start).Round(time.Second)
	requests := "requests"
	if w.held == 1 {
		requests = "request"
	}
	args := []any{"reason", label, "refused", w.held, "over", over}
	if len(w.users) > 0 {
		args = append(args, "users", w.users)
		if w.moreUsers > 0 {
			args = append(args, "more_users", w.moreUsers)
		}
	}
	l.Log(context.Background(), w.level, fmt.Sprintf("refused %d %s for %s in the last %s (each at debug)", w.held, requests, label, durtext.Written(over)), args...)
}

// log logs one refusal of reason at now: in full at level (msg and args)
// when it is the first of a window, at debug otherwise; a window over
// (capacityNote) with refusals held is summed up first in one line at
// its level, and the refusal opens the next window at debug.
func (r *refusalNotes) log(l *slog.Logger, now time.Time, reason string, level slog.Level, msg string, args ...any) {
	r.logFrom(l, now, reason, "", "", level, msg, args...)
}

// logFrom is log for a refusal of the client at address client (its IP)
// and user name user: its window is the reason's for that client, so
// that one password guesser does not hide another subscriber's refused
// logins, and the window's summary names the users refused. With client
// "" it is log.
func (r *refusalNotes) logFrom(l *slog.Logger, now time.Time, reason, client, user string, level slog.Level, msg string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock() // held while logging: the summary comes before the next window's lines
	if r.by == nil {
		r.by = map[string]*refusalWindow{}
	}
	label := reason
	if client != "" {
		label = reason + " from " + client
		if _, ok := r.by[label]; !ok && len(r.by) >= maxRefusalWindows {
			label = reason + " from other addresses"
		}
	}
	w := r.by[label]
	if w != nil && (now.Sub(w.start) >= capacityNote || now.Before(w.start)) {
		if w.held == 0 {
			w = nil // a lull: this refusal is logged in full again
		} else {
			summaryLocked(l, label, w, now)
			w.reset(now, level)
		}
	}
	if w == nil {
		r.by[label] = &refusalWindow{start: now, level: level}
		l.Log(context.Background(), level, msg+fmt.Sprintf(" (further refusals for %s logged at debug, counted in one line every %s)", label, durtext.Written(capacityNote)), args...)
		return
	}
	w.held++
	w.addUser(user)
	l.Debug(msg, args...)
}

// flush sums up the windows over at now that hold refusals, and forgets
// the windows over that hold none: called from the manager's tick, so
// that the count of a burst is logged once it is over, not at the next
// refusal.
func (r *refusalNotes) flush(l *slog.Logger, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for reason, w := range r.by {
		if now.Sub(w.start) < capacityNote && !now.Before(w.start) {
			continue
		}
		if w.held == 0 {
			delete(r.by, reason)
			continue
		}
		summaryLocked(l, reason, w, now)
		w.reset(now, w.level)
	}
}
