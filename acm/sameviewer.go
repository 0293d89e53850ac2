package acm

import (
	"net"
	"slices"
	"time"

	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/proto/token"
)

// sameHTTPViewerLocked returns the grant of a live HTTP session of r's
// user and title from r's client address, or nil. Players such as ffmpeg
// and ffplay ask the front door's URL again when they seek (also right
// after probing), and a node counts every request of one token as one
// viewer: such a request is the same viewer, and gets a new token for
// the same session instead of a second reservation. Two viewers of one
// subscriber behind one address watching the same title over HTTP share
// one session (and its pace at the node).
//
// Such a session on a node out of service (its heartbeat stream broken,
// or dead and kept for its return, its viewer gone from it) is ended (endStrandedLocked) and
// returned in stranded for the caller to persist once mu is released:
// its viewer, back at the front door, is admitted anew on a node in
// service instead of being sent back to one that is not. So is such a
// session on a node that registered since without an origin and lacks the
// title complete (cannotServeLocked): the node can neither play nor fetch
// it (endLackingLocked); and such a session whose viewer has not reached
// the node (no STARTED yet) on a node without an origin that holds only a
// stale copy of the title (staleOnlyLocked): placed afresh, the viewer
// plays the current version where a node has it or can fetch it
// (endStaleOnlyLocked). A viewer already playing the stale copy keeps its
// session.
func (m *Manager) sameHTTPViewerLocked(r admitRequest, title string, now time.Time) (g *grant, stranded []*session) {
	if m.userSessions[r.User] == 0 && !m.orphansOfLocked(r.User) {
		return nil, nil
	}
	var lacking, staleOnly []*session
	for _, s := range m.sessions {
		if s.User != r.User || s.Title != title || s.Protocol != store.ProtoHTTP || s.ended {
			continue
		}
		if host, _, err := net.SplitHostPort(s.ClientAddr); err != nil || host != r.ClientIP {
			continue
		}
		n := m.sched.Node(s.Node)
		if n == nil || n.HTTPAddr == "" {
			continue
		}
		if !n.Alive || n.Unreachable {
			// Reserved (its heartbeat stream broke), or not (dead, its
			// sessions orphaned, kept for its return, which would find
			// the viewer playing here with a second session) when its
			// viewer had left it: never reached the node, or listed idle,
			// or quiet quietLeft, before the node died (orphanLocked). A
			// node that only lost its link to the manager plays on: one
			// such session playing may be another player of the
			// household, not to be cut.
			if s.reserved || s.State == store.StateAdmitted || !s.idleSince.IsZero() {
				stranded = append(stranded, s)
			}
			continue
		}
		if !s.reserved {
			continue
		}
		if m.cannotServeLocked(n, title) {
			lacking = append(lacking, s)
			continue
		}
		if m.staleOnlyLocked(n, s) {
			staleOnly = append(staleOnly, s)
			continue
		}
		if g == nil {
			g = m.grantLocked(s.Session, n)
		}
	}
	m.endStrandedLocked(stranded, now)
	m.endLackingLocked(lacking, now)
	m.endStaleOnlyLocked(staleOnly, now)
	return g, slices.Concat(stranded, lacking, staleOnly)
}

// orphansOfLocked reports whether user has a session on a node that is
// dead (its sessions orphaned, out of userSessions: orphanLocked) or
// whose heartbeat stream broke (mu held). It visits those nodes' sessions
// only.
func (m *Manager) orphansOfLocked(user string) bool {
	for range m.sessionsOutLocked(user, true) {
		return true
	}
	return false
}

// cannotServeLocked reports whether node n has no origin
// (lsm.NodeSpec.NoOrigin) and does not hold title complete as the
// manager sees it (its last report, with the fills booked since): it can
// neither play the title nor fetch it (mu held). A session there of the
// same viewer (a node restarted without an origin, its disk without the
// title) is not given a new token: the viewer would be sent to a node
// that answers 404.
func (m *Manager) cannotServeLocked(n *lsm.Node, title string) bool {
	if !n.NoOrigin {
		return false
	}
	ns := m.nodes[n.ID]
	if ns == nil {
		return true
	}
	st := ns.titles[title]
	return st == nil || st.GetFilling() || ns.awaiting[title] || ns.pending[title] != nil
}

// staleOnlyLocked reports whether s, a session whose viewer has not
// reached its node n yet (store.StateAdmitted: no STARTED from the node),
// waits on a node without an origin (lsm.NodeSpec.NoOrigin) that holds
// only a stale copy of its title (a copy of another version than the
// catalog's, counted stale as lsm sees it: lsm.Node.HoldsStale, set by
// staleLocked and markReplacedLocked) (mu held). Such a node can never fetch the current version; the viewer,
// who has seen nothing yet, is better placed afresh: lsm sends it to the
// current version when a node has it or can fetch it, and back to a
// stale copy only when none can (its staleFallback).
func (m *Manager) staleOnlyLocked(n *lsm.Node, s *session) bool {
	if !n.NoOrigin || s.State != store.StateAdmitted {
		return false
	}
	filling, ok := n.Holds(s.Title)
	return ok && !filling && n.HoldsStale(s.Title)
}

// reasonNoOriginStale is the reason (node order, session record) of a
// session ended because its viewer, who had not reached the node, came
// back to the front door while the session's node, without an origin,
// holds only a stale copy of the title.
const reasonNoOriginStale = "moved: its node has no origin and holds only a stale copy of the title"

// endStaleOnlyLocked ends sessions whose viewer came back to the front
// door before reaching their node, which has no origin and holds only a
// stale copy of their title (staleOnlyLocked), as endLackingLocked ends
// those on such a node lacking it (mu held).
func (m *Manager) endStaleOnlyLocked(ss []*session, now time.Time) {
	m.endMovedLocked(ss, "session ended: its viewer came back before reaching its node, which has no origin and holds only a stale copy of the title", reasonNoOriginStale, now)
}

// reasonNoOriginLacks is the reason (node order, session record) of a
// session ended because its viewer came back to the front door while the
// session's node, registered without an origin since, lacks the title.
const reasonNoOriginLacks = "moved: its node came back without an origin and lacks the title"

// reasonStranded is the reason (node order, session record) of a session
// ended because its viewer came back to the front door while the
// session's node was out of service.
const reasonStranded = "moved: its node was out of service when its viewer came back to the front door"

// endLackingLocked ends sessions whose viewer came back to the front door
// while their node has no origin and lacks their title
// (cannotServeLocked), as endStrandedLocked ends those on a node out of
// service (mu held).
func (m *Manager) endLackingLocked(ss []*session, now time.Time) {
	m.endMovedLocked(ss, "session ended: its viewer came back while its node, registered without an origin, lacks the title", reasonNoOriginLacks, now)
}

// endStrandedLocked ends sessions whose viewer came back to the front
// door while their node is out of service (mu held).
func (m *Manager) endStrandedLocked(ss []*session, now time.Time) {
	m.endMovedLocked(ss, "session ended: its viewer came back while its node is out of service", reasonStranded, now)
}

// endMovedLocked ends sessions whose viewer came back to the front door
// while their node could not serve them (mu held), logging each with
// msg, as an operator's end does (endOrderedLocked: reservation and slot
// freed, the node told when it reports again, reason in its order and
// the session's record); the viewer is admitted anew. The caller persists
// them once mu is released.
func (m *Manager) endMovedLocked(ss []*session, msg, reason string, now time.Time) {
	if len(ss) == 0 {
		return
	}
	for _, s := range ss {
		m.log.Info(msg, "session", s.ID, "user", s.User, "title", s.Title, "node", s.Node, "protocol", s.Protocol)
	}
	m.endOrderedLocked(ss, reason, now)
}

// unusedGrantLocked returns the grant of r.Reuse, a session of r's user
// and title admitted earlier on the same RTSP connection whose viewer has
// not reached its node (mu held); nil otherwise.
// One on a node out of service, or on a node without an origin that lacks
// the title (cannotServeLocked) or holds only a stale copy of it
// (staleOnlyLocked), is ended and returned in stranded, as in
// sameHTTPViewerLocked.
func (m *Manager) unusedGrantLocked(r admitRequest, title string, now time.Time) (g *grant, stranded []*session) {
	if r.Reuse == "" {
		return nil, nil
	}
	s := m.sessions[r.Reuse]
	if s == nil || s.User != r.User || s.Title != title || s.State != store.StateAdmitted || !s.reserved || s.ended {
		return nil, nil
	}
	n := m.sched.Node(s.Node)
	if n == nil {
		return nil, nil
	}
	if !n.Alive || n.Unreachable {
		stranded = []*session{s}
		m.endStrandedLocked(stranded, now)
		return nil, stranded
	}
	if m.cannotServeLocked(n, title) {
		stranded = []*session{s}
		m.endLackingLocked(stranded, now)
		return nil, stranded
	}
	if m.staleOnlyLocked(n, s) {
		stranded = []*session{s}
		m.endStaleOnlyLocked(stranded, now)
		return nil, stranded
	}
	return m.grantLocked(s.Session, n), nil
}

// copyForRepeatLocked reports where the viewer of r, given its session
// on node again (sameHTTPViewerLocked, unusedGrantLocked) while the origin
// is down, finds the title (mu held): here, on that node; elsewhere, on
// another node in service it may use (its protocol, and its site with
// SiteOnly); each as the node's last report shows it held or filling. A
// fill placed for a session whose viewer has not reached the node
// (awaiting) or a prefetch ordered (pending) is not in the report: it
// cannot start without the origin. Neither is admission's errOriginDown:
// the viewer sent back to its node would be answered 503 there after the
// redirect. Elsewhere only: a viewer who never reached its node is
// admitted anew there (reasonMovedOriginDown).
func (m *Manager) copyForRepeatLocked(r admitRequest, title, node string) (here, elsewhere bool) {
	reported := func(id string) bool {
		ns := m.nodes[id]
		return ns != nil && ns.titles[title] != nil && !ns.awaiting[title] && ns.pending[title] == nil
	}
	if reported(node) {
		return true, false
	}
	requires, site := m.requiresLocked(r), m.sites.siteOf(r.ClientIP)
	for _, i := range m.sched.Holders(title) {
		n := m.sched.Nodes[i]
		if n.ID == node || requires&^n.Features != 0 || (m.SiteOnly && site != "" && n.Site != site) || !m.sched.InService(n) {
			continue
		}
		if reported(n.ID) {
			return false, true
		}
	}
	return false, false
}

// reasonMovedOriginDown is the reason (node order, session record) of a
// session ended because its viewer, who never reached its node, came back
// to the front door while the origin is down and the node lacks the
// title another node has: the viewer is admitted anew there.
const reasonMovedOriginDown = "moved: the origin is unavailable, its node lacks the title and another node has it"

// reasonMovedTransport is the reason of a session ended because its
// viewer, who never reached its node, came back to the front door on the
// same connection with a SETUP its node cannot serve (one that offers
// only UDP, admitted on a DESCRIBE on a node with tcp_only): the viewer is
// admitted anew on a node that can.
const reasonMovedTransport = "moved: its node sends over TCP only and the SETUP offers only UDP"

// moveLocked ends old, the session of the same viewer moved to s for
// reason (reasonMovedOriginDown, reasonMovedTransport), now that its new
// session s is placed (mu held), and returns it for the caller to persist
// once mu is released; nil when old is nil or ended meanwhile. Ended only
// here, so that a viewer whose new admission is refused keeps its session.
func (m *Manager) moveLocked(old, s *session, reason string, now time.Time) []*session {
	if old == nil || old.ended {
		return nil
	}
	m.log.Info("same viewer moved to another node", "reason", reason,
		"title", old.Title, "user", old.User, "session", old.ID, "node", old.Node, "new_session", s.ID, "new_node", s.Node)
	m.endOrderedLocked([]*session{old}, reason, now)
	return []*session{old}
}

// regrant signs a new token for g's live session (sameHTTPViewerLocked,
// unusedGrantLocked).
func (m *Manager) regrant(g *grant, r admitRequest, now time.Time) (*grant, error) {
	s := g.Session
	tok, err := m.signer.Sign(token.Claims{
		Session: s.ID, Title: s.Title, Node: s.Node, Client: r.ClientIP, User: s.User, Bitrate: s.BitrateBps, Proto: r.Protocol, Door: r.Door, Readmitted: r.Readmitted,
	}, now, m.TokenTTL)
	if err != nil {
		m.log.Error("token", "session", s.ID, "err", err)
		return nil, errUnavailable
	}
	g.Token = tok
	reusesTotal.WithLabelValues(r.Protocol).Inc()
	m.reexpect(s.ID, now) // its node keeps the title until the new token expires
	m.log.Debug("same viewer: new token for its session", "session", s.ID, "user", s.User, "title", s.Title, "client", r.Client, "protocol", r.Protocol)
	return g, nil
}
