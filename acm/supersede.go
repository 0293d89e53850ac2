package acm

import (
	"cmp"
	"iter"
	"net"
	"net/netip"
	"slices"
	"time"

	"vodcluster/acm/store"
	"vodcluster/proto/connlimit"

	pb "vodcluster/proto/vodcluster/v1"
)

// An HTTP session (progressive or HLS) lives on at its node for
// pause_timeout (5 min) after its viewer's last request, so that a paused
// player resumes in it, and so does an RTSP session its client PAUSEd
// without keepalives; it counts against its subscriber's
// MaxSessionsPerUser all that time. A viewer zapping over HTTP through
// more titles than the limit would be refused (HTTP 429) until the first
// ones end, with no way to end them himself. So a new request of a
// subscriber at the limit supersedes the subscriber's idle session, the
// one idle longest: the manager ends it as an operator's end does
// (endOrderedLocked) and admits the request. Idle is the node's word
// (LoadReport.idle_sessions): an HTTP session with no request in progress
// and none for longer than the node's session timeout (60 s), or an RTSP
// session PAUSEd and silent that long. A viewer zapping faster than that
// was still locked out for up to a minute (nine titles 3 s each: the
// ninth refused for 40 s), so an HTTP session quiet for quietLeft or more
// (LoadReport.quiet_sessions: no request in progress, none for 10 s)
// whose client address is the new request's counts too: a player
// playing HLS asks for a segment every few seconds, one playing a
// progressive download has its request in progress, so that session is
// the same player's earlier title, or a paused player of the same
// household, which gives way at the limit as an idle one does. Those
// idle go first, then those quiet, each the longest first. With none of
// its sessions idle or so quiet, the subscriber is refused as before.

// quietLeft is how long an HTTP session has been quiet (no request in
// progress) for the manager to take its viewer as gone or paused: longer
// than a playing HLS player waits between segments (a segment's length,
// 2 to 8 s, hls.go).
const quietLeft = 10 * time.Second

// quietSoon is how long an HTTP session must have been quiet for the
// 429 at the session limit to say when it will have been quiet quietLeft
// (Retry-After): longer than a playing HLS player waits between segments
// (8 s at the most, hls.go's target duration), so that a viewer playing
// is never counted as one that will give way.
const quietSoon = 8 * time.Second

// reasonSuperseded is the reason (node order, session record) of an idle
// session ended for a new request of its subscriber.
const reasonSuperseded = "superseded: idle session of a subscriber at the session limit"

// maxIdleSeconds bounds a report's idle_seconds (68 years), so that the
// duration does not overflow.
const maxIdleSeconds = 1 << 31

// idleSince returns the idle sessions of a load report applied at now,
// by id, with when each became idle by the manager's clock (now minus its
// idle seconds: the node's clock does not enter); nil when none. Entries
// without an id or with negative seconds are ignored.
func idleSince(idle []*pb.IdleSession, now time.Time) map[string]time.Time {
	var out map[string]time.Time
	for _, e := range idle {
		secs := e.GetIdleSeconds()
		if e.GetSessionId() == "" || secs < 0 {
			continue
		}
		if out == nil {
			out = make(map[string]time.Time, len(idle))
		}
		out[e.GetSessionId()] = now.Add(-time.Duration(min(secs, maxIdleSeconds)) * time.Second)
	}
	return out
}

// supersedeIdleLocked makes room for a new request of user, who holds
// held sessions and queued requests, at least limit (mu held): it ends
// the user's idle sessions, longest idle first, as many as bring
// held below limit (one, unless the limit was lowered), and returns them
// for the caller to persist once mu is released. Only sessions reserved
// on a live node that the node's last report listed idle count. Nil, and
// nothing ended, when too few of the user's sessions are idle; then
// refused is the refusal: a userLimited (userLimitedLocked), with how
// long until enough would be when the HTTP sessions of the request's
// client quiet for quietSoon but not yet quietLeft (a player zapping),
// and the user's redirects not taken up yet (skip, a session the request
// replaces, left out), would make enough: the 429's Retry-After.
func (m *Manager) supersedeIdleLocked(user, clientIP string, held, limit int, skip *session, now time.Time) (ended []*session, refused error) {
	need := held - limit + 1
	if need <= 0 {
		return nil, errUserLimit
	}
	type idleOne struct {
		s     *session
		since time.Time
		quiet bool // listed quiet, not idle
	}
	var idle []idleOne
	var soon []time.Duration // until each quiet session of the client is quiet quietLeft
	for _, ns := range m.nodes {
		if len(ns.idle)+len(ns.quiet) == 0 {
			continue
		}
		if n := m.sched.Node(ns.id); n == nil || !n.Alive || n.Unreachable {
			// Unreachable: its sessions are not counted at the limit
			// (unreachableSessionsLocked); ending one frees no slot.
			continue
		}
		for id, since := range ns.idle {
			s := ns.sessions[id]
			if s == nil || s.User != user || s.ended || !s.reserved || s.uncounted {
				continue
			}
			idle = append(idle, idleOne{s, since, false})
		}
		for id, since := range ns.quiet {
			s := ns.sessions[id]
			if s == nil || s.User != user || s.ended || !s.reserved || s.uncounted ||
				s.Protocol != store.ProtoHTTP || !sameClient(s.ClientAddr, clientIP) {
				continue
			}
			if quiet := now.Sub(since); quiet < quietLeft {
				if quiet >= quietSoon {
					// +1 s: nodes report quiet seconds whole, so since may
					// be up to a second late.
					soon = append(soon, quietLeft-quiet+time.Second)
				}
				continue
			}
			idle = append(idle, idleOne{s, since, true})
		}
	}
	if len(idle) < need {
		u := m.userLimitedLocked(user, held, limit, need-len(idle), soon, skip, now)
		if u.quiet {
			m.log.Info("the session limit's refusal says when a quiet session of the client gives way", "user", user, "retry_after", u.wait.Round(time.Second))
		}
		return nil, u
	}
	slices.SortFunc(idle, func(a, b idleOne) int {
		return cmp.Or(cmp.Compare(boolInt(a.quiet), boolInt(b.quiet)), a.since.Compare(b.since), cmp.Compare(a.s.ID, b.s.ID))
	})
	ended = make([]*session, 0, need)
	for _, o := range idle[:need] {
		ended = append(ended, o.s)
		supersededTotal.WithLabelValues(o.s.Protocol).Inc()
		delete(m.nodes[o.s.Node].idle, o.s.ID)
		delete(m.nodes[o.s.Node].quiet, o.s.ID)
		m.log.Info("idle session superseded: its subscriber is at the session limit", "session", o.s.ID, "user", user,
			"node", o.s.Node, "title", o.s.Title, "idle", now.Sub(o.since).Round(time.Second), "quiet_from_same_address", o.quiet, "limit", limit)
	}
	m.endOrderedLocked(ended, reasonSuperseded, now)
	return ended, nil
}

// unreachableSessionsLocked counts the sessions of user counted in
// userSessions, but skip, on nodes whose heartbeat stream broke
// (lsm.Node.Unreachable; mu held). It visits those nodes' sessions only,
// and only for a subscriber at its limit.
func (m *Manager) unreachableSessionsLocked(user string, skip *session) int {
	n := 0
	for s := range m.sessionsOutLocked(user, false) {
		if s != skip && !s.uncounted {
			n++
		}
	}
	return n
}

// sessionsOutLocked yields the live sessions of user on nodes whose
// heartbeat stream broke (lsm.Node.Unreachable) and, when dead is true,
// on nodes that are dead or forgotten too (their sessions orphaned: see
// orphanLocked) (mu held). It visits those nodes' sessions only.
func (m *Manager) sessionsOutLocked(user string, dead bool) iter.Seq[*session] {
	return func(yield func(*session) bool) {
		for id, ns := range m.nodes {
			n := m.sched.Node(id)
			if out := n != nil && n.Unreachable; !out && (!dead || n != nil && n.Alive) {
				continue
			}
			for _, s := range ns.sessions {
				if s.User == user && !s.ended && !yield(s) {
					return
				}
			}
		}
	}
}

// sameClient reports whether a session's client address (ip:port, or an
// ip) and a request's client ip are one client, as the connection limit
// keys them (connlimit.AddrKey: the same address, an IPv4-mapped one as
// IPv4, or for IPv6 the same /64: a household's devices, a device's
// privacy addresses). False when either does not parse.
func sameClient(sessionAddr, ip string) bool {
	host := sessionAddr
	if h, _, err := net.SplitHostPort(sessionAddr); err == nil {
		host = h
	}
	a, err1 := netip.ParseAddr(host)
	b, err2 := netip.ParseAddr(ip)
	if err1 != nil || err2 != nil {
		return false
	}
	return connlimit.AddrKey(a) == connlimit.AddrKey(b)
}
