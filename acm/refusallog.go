package acm

import (
	"context"
	"fmt"
	"log/slog"
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
	refusedOriginDown      = "origin unavailable"               // the origin is down and no node the viewer may use has the title (errOriginDown)
	refusedNoSource        = "no source"                        // no node the viewer may use holds the title and none has an origin (errNoSource)
	refusedStoreDown       = "store unavailable"                // the store failed or did not answer within store_timeout, and no health check read it since (errStoreDown)
	refusedOverEgress      = "bitrate over every node's egress" // the title's bitrate is more than any node the viewer may use can stream (errOverEgress)
	refusedLogins          = "too many failed logins"           // the client's address ran out of failed logins, for the user name or over all (errThrottled)
	refusedCredentials     = "wrong credentials"                // the BOSS refused the user name and password (errUnauthorized)
)

// refusalNotes collapses the log lines of the front door's capacity
// refusals per reason (capacityNote). Safe for concurrent use; its zero
// value is ready to use.
type refusalNotes struct {
	mu sync.Mutex
	by map[string]*refusalWindow // reason -> its window; at most one per reason
}

// refusalWindow is the current capacityNote window of one reason: since
// when, the level of its lines, and how many refusals were logged at
// debug in it.
type refusalWindow struct {
	start time.Time
	level slog.Level
	held  int
}

// summaryLocked logs how many refusals w held (logged at debug) for
// reason by now.
func summaryLocked(l *slog.Logger, reason string, w *refusalWindow, now time.Time) {
	over := now.Sub(w.start).Round(time.Second)
	requests := "requests"
	if w.held == 1 {
		requests = "request"
	}
	l.Log(context.Background(), w.level, fmt.Sprintf("refused %d %s for %s in the last %s (each at debug)", w.held, requests, reason, durtext.Written(over)),
		"reason", reason, "refused", w.held, "over", over)
}

// log logs one refusal of reason at now: in full at level (msg and args)
// when it is the first of a window, at debug otherwise; a window over
// (capacityNote) with refusals held is summed up first in one line at
// its level, and the refusal opens the next window at debug.
func (r *refusalNotes) log(l *slog.Logger, now time.Time, reason string, level slog.Level, msg string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock() // held while logging: the summary comes before the next window's lines
	if r.by == nil {
		r.by = map[string]*refusalWindow{}
	}
	w := r.by[reason]
	if w != nil && (now.Sub(w.start) >= capacityNote || now.Before(w.start)) {
		if w.held == 0 {
			w = nil // a lull: this refusal is logged in full again
		} else {
			summaryLocked(l, reason, w, now)
			w.start, w.level, w.held = now, level, 0
		}
	}
	if w == nil {
		r.by[reason] = &refusalWindow{start: now, level: level}
		l.Log(context.Background(), level, msg+fmt.Sprintf(" (further refusals for %s logged at debug, counted in one line every %s)", reason, durtext.Written(capacityNote)), args...)
		return
	}
	w.held++
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
		w.start, w.held = now, 0
	}
}
