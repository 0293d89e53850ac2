package acm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/proto/token"
	"vodcluster/smm"
)

// Admission outcomes the front doors map to RTSP and HTTP statuses.
var (
	errUnauthorized = errors.New("unauthorized")                           // 401
	errForbidden    = errors.New("title not in the subscriber's packages") // 403
	errNoTitle      = errors.New("unknown title")                          // 404
	errNoBandwidth  = errors.New("no node has headroom for the title")     // RTSP 453, HTTP 503 + Retry-After
	errUserLimit    = errors.New("subscriber has too many sessions")       // RTSP 403, HTTP 429
	errUnavailable  = errors.New("service unavailable")                    // 503: BOSS or store down, shutting down
	errThrottled    = errors.New("too many failed logins")                 // RTSP 503, HTTP 429, + Retry-After
	errRateLimited  = errors.New("subscriber over the request limit")      // RTSP 503, HTTP 429, + Retry-After
	// errChallenge is the 401 that asks for credentials, not one that
	// refuses them: the request carried none (a player's first request),
	// or a Digest nonce that expired or was already used with the same
	// response. It wraps errUnauthorized.
	errChallenge = fmt.Errorf("%w: credentials required", errUnauthorized)
	// errTokenTitle is the 403 of a subscriber token that opens another
	// title. It wraps errForbidden.
	errTokenTitle = fmt.Errorf("%w: the subscriber token opens another title", errForbidden)
	// errEndedByOperator is the 403 of a request that waited in the
	// admission queue while the operator ended its subscriber's sessions
	// (Admin.EndSessions by user). It wraps errForbidden.
	errEndedByOperator = fmt.Errorf("%w: the operator ended the subscriber's sessions", errForbidden)
)

// admitRequest is one request for a title at a front door.
type admitRequest struct {
	User     string
	Title    string
	ClientIP string // bound into the token (cip)
	Client   string // ip:port, for the session table
	Protocol string // store.ProtoRTSP or store.ProtoHTTP
	// Door is the RTSP front door the viewer asked (rtspDoor), signed into
	// the token (token.Claims.Door); "" over HTTP.
	Door string
	// Readmitted: authenticated by a re-admission ticket
	// (authenticateReadmit), signed into the token
	// (token.Claims.Readmitted): no ticket is made from it.
	Readmitted bool
	// Reuse is a session granted earlier on the same RTSP connection for
	// the same title: while its viewer has not reached the node, it gets a
	// new token instead of a second admission.
	Reuse string
	// NeedsUDP: an RTSP SETUP that offers only UDP (rtspwire.NeedsUDP);
	// only a node that serves UDP (lsm.FeatureUDP) may take it.
	NeedsUDP bool
}

// errNoCatalog is the 503 (with Retry-After) of a title request to a
// manager that has no catalog: its origin was never reached and its store
// holds none (Manager.noCatalog). It wraps errUnavailable; the answer
// says why, as /healthz does.
var errNoCatalog = fmt.Errorf("%w: no catalog yet: the origin has not been reached", errUnavailable)

// errBOSSDown refuses a request the subscriber database (the BOSS) could
// not check: it failed or did not answer. It wraps errUnavailable: RTSP
// and HTTP 503 with Retry-After, saying so.
var errBOSSDown = fmt.Errorf("%w: the subscriber database does not answer", errUnavailable)

// entitled returns title id of the catalog when user may watch it.
// Errors: errNoTitle, errUnauthorized (the BOSS no longer knows the
// user), errForbidden (not in the user's packages), errUnavailable (the
// BOSS failed: errBOSSDown; errNoCatalog when no catalog was ever read).
func (m *Manager) entitled(ctx context.Context, user, id string) (store.Title, error) {
	t, ok := m.titles()[id]
	if !ok && m.noCatalog() {
		// Not "no such title": no title is known yet (503, as /healthz).
		return store.Title{}, errNoCatalog
	}
	if !ok {
		return store.Title{}, errNoTitle
	}
	ok, err := m.BOSS.Entitled(ctx, user, t.Package)
	switch {
	case errors.Is(err, boss.ErrUnknownUser):
		return store.Title{}, errUnauthorized
	case err != nil:
		m.log.Error("boss: entitlement check failed", "user", user, "err", err)
		return store.Title{}, errBOSSDown
	case !ok:
		return store.Title{}, errForbidden
	}
	return t, nil
}

// admit runs entitlement and admission for an authenticated user. It
// waits (first come first served) up to QueueDeadline for a node with
// headroom, or until ctx ends (the client went away: the request leaves
// the queue). A request no node could take unless an operator acts
// (every node that could is drained or at weight 0) is refused at once,
// also while it waits (errNoNodeInService), as is one while no node
// reports to the manager (errNoNodeReporting). On success the session is in
// the table and the store and its bitrate is reserved; on any error
// nothing stays reserved.
func (m *Manager) admit(ctx context.Context, r admitRequest) (*grant, error) {
	t, err := m.entitled(ctx, r.User, r.Title)
	if err != nil {
		return nil, err
	}

	now := m.now()
	m.mu.Lock()
	if m.suspendedLocked(r.User, now) {
		m.mu.Unlock()
		return nil, errSuspended
	}
	// The same viewer's session on a node in service gets a new token;
	// one on a node out of service ends (stranded) and the viewer is
	// admitted anew. The sessions ended here (stranded, and superseded
	// below) are persisted once mu is released: before the request
	// waits in the queue, or as it returns.
	var g *grant
	var endedHere []*session
	var moving *session // the same viewer's session moved, ended once the new one is placed
	var movedFor string // why: reasonMovedOriginDown, reasonMovedTransport
	defer func() { m.persistAllFront(endedHere) }()
	if r.Protocol == store.ProtoHTTP {
		g, endedHere = m.sameHTTPViewerLocked(r, t.ID, now)
	}
	if g == nil {
		var s []*session
		g, s = m.unusedGrantLocked(r, t.ID, now)
		endedHere = append(endedHere, s...)
	}
	if g != nil && m.originDown.Load() {
		switch here, elsewhere := m.copyForRepeatLocked(r, t.ID, g.Session.Node); {
		case here:
		case elsewhere && g.Session.State == store.StateAdmitted:
			// The session's node would need a fill that cannot start,
			// and its viewer never reached it: the viewer is admitted
			// anew below, on a node that has the title, and the session
			// ends once that admission has placed it (moveLocked); a
			// refusal keeps it, for when the origin returns.
			if s := m.sessions[g.Session.ID]; s != nil {
				moving, movedFor = s, reasonMovedOriginDown
				g = nil
			}
		case !elsewhere:
			// As for a new request below: the session's node would
			// need a fill that cannot start.
			m.mu.Unlock()
			m.capRefusals.log(m.log, m.now(), refusedOriginDown, slog.LevelInfo, "same viewer refused: origin unavailable and no node the viewer may use has the title (its session's node would need a fill)",
				"title", t.ID, "user", r.User, "session", g.Session.ID, "node", g.Session.Node)
			return nil, errOriginDown
		}
	}
	if g != nil && g.Session.State == store.StateAdmitted {
		if n := m.sched.Node(g.Session.Node); n != nil && m.requiresLocked(r)&^n.Features != 0 {
			// Its node cannot serve this request (a SETUP that offers
			// only UDP, on the connection whose DESCRIBE was admitted
			// on a node with tcp_only), and its viewer never reached
			// it: admitted anew below on a node that can, the session
			// ends once that admission has placed it (moveLocked); a
			// refusal keeps it.
			if s := m.sessions[g.Session.ID]; s != nil {
				moving, movedFor = s, reasonMovedTransport
				g = nil
			}
		}
	}
	if g != nil {
		var newToken *session
		if s := m.sessions[g.Session.ID]; s != nil && s.State == store.StateAdmitted {
			// Its viewer has not reached the node (as far as the manager
			// knows: its STARTED may be on its way): the no-show clock
			// (tick) and the node's ExpectCommand (regrant) follow the
			// new token, signed at now, as they followed the first; never
			// back, for a request that took its time past a later one.
			// AdmittedAt stays the admission's (records, listings).
			if now.After(s.TokenAt) {
				s.TokenAt, newToken = now, s
			}
		}
		m.mu.Unlock()
		ng, err := m.regrant(g, r, now)
		if newToken != nil {
			// Stored with the session, so that a manager that takes
			// over (or this one restarted) counts the no-show from the
			// new token too, not from the admission; written off the
			// front door (reportWriter), as a load report's changes are:
			// the viewer's token needs no store, and its session was
			// stored at its admission, so its redirect does not wait
			// for a slow store, and a write that fails is made again on
			// the store's return (retryLater).
			m.persistLater([]*session{newToken})
		}
		return ng, err
	}
	if m.health.storeDown.Load() {
		// A new session could not be stored: answer at once rather than
		// after StoreTimeout (the health check reads the store again and
		// again until it answers: healthLoop). A viewer's new token above
		// needs no store.
		m.mu.Unlock()
		m.capRefusals.log(m.log, m.now(), refusedStoreDown, slog.LevelWarn, "admission refused at once: the store is unavailable (it failed, or did not answer within store_timeout) until a health check reads it again",
			"title", t.ID, "user", r.User)
		return nil, errStoreDown
	}
	req := lsm.Request{Title: t.ID, Client: r.User, Bitrate: t.BitrateBps, Bytes: t.SizeBytes,
		Site: m.sites.siteOf(r.ClientIP), SiteOnly: m.SiteOnly}
	req.Requires = m.requiresLocked(r)
	if err := m.refuseNoNodeLocked(&req, r.User, now); err != nil { // unlocks mu
		return nil, err
	}
	if m.originDown.Load() {
		// No fill can start: only a node whose report shows the title,
		// whole or filling (not a fill booked there for a viewer who has
		// not arrived: it cannot start either).
		req.OriginDown = true
		if m.sched.HoldersInServiceFor(&req) == 0 {
			m.mu.Unlock()
			m.capRefusals.log(m.log, m.now(), refusedOriginDown, slog.LevelInfo, "admission refused: origin unavailable and no node the viewer may use holds the title", "title", t.ID, "user", r.User, "site", req.Site)
			return nil, errOriginDown
		}
		// lsm keeps it to holders (Request.OriginDown), while it waits
		// too: until the origin comes back (queuedOriginDown).
	}
	if err := m.refuseNoSourceLocked(&req, r.User, now); err != nil { // unlocks mu
		return nil, err
	}
	if err := m.refuseOverEgressLocked(&req, r.User, now); err != nil { // unlocks mu
		return nil, err
	}
	// The subscriber's requests still in the queue count against the
	// limit with its sessions: otherwise one account could queue any
	// number of requests while the cluster is full and take every slot
	// that frees up. At the limit, the request supersedes the
	// subscriber's idle session (supersede.go), if any: after the
	// refusals that do not depend on it (the origin down), which
	// leave the paused viewer its session.
	// The sessions it supersedes are persisted with the stranded ones
	// (endedHere).
	// A session being moved (moving) is not counted: the new one replaces it.
	// Nor are sessions on a node whose heartbeat stream broke (a crash
	// the manager has not yet taken for a death, which uncounts them:
	// orphanLocked): their viewers, cut off, come back at once, and a
	// household at its limit would be refused 403 until then.
	held := m.userSessions[r.User] + m.userPending[r.User]
	if moving != nil {
		held--
	}
	if limit := m.MaxSessionsPerUser; limit > 0 && held >= limit {
		held -= m.unreachableSessionsLocked(r.User, moving)
	}
	if limit := m.MaxSessionsPerUser; limit > 0 && held >= limit {
		superseded, refused := m.supersedeIdleLocked(r.User, r.ClientIP, held, limit, moving, now)
		if superseded == nil {
			m.mu.Unlock()
			m.log.Info("admission refused: subscriber at the session limit", "user", r.User, "title", t.ID, "limit", limit)
			return nil, refused
		}
		endedHere = append(endedHere, superseded...)
	}
	m.userPending[r.User]++
	smm.Observe(m.planner, t.ID, req.Site, now) // the storage planner places replicas where viewers ask
	// The requests already waiting go first: capacity freed since the
	// last pump (a release whose kick the pump loop has not seen yet)
	// is theirs, not this request's.
	m.pumpLocked(now)
	tk, err := m.sched.Admit(req, now.Add(m.QueueDeadline), now)
	if err != nil {
		m.pendingDoneLocked(r.User)
		m.mu.Unlock()
		m.log.Error("admission refused a malformed request", "title", t.ID, "err", err)
		return nil, errUnavailable
	}
	if !tk.Done && m.needsOperatorLocked(&tk.Req, now) {
		m.sched.Cancel(tk, errNoNodeInService) // nothing drained comes back by itself: no wait
	}
	answered := now // when the refusal below is made: now, unless it waited
	if !tk.Done {
		ch := make(chan struct{})
		m.waiters[tk] = ch
		m.mu.Unlock()
		m.kickPump() // arm the timer for this deadline
		m.persistAllFront(endedHere)
		endedHere = nil
		var gone error
		select {
		case <-ch:
		case <-ctx.Done():
			gone = ctx.Err()
		case <-m.ctx.Done():
			gone = errUnavailable
		}
		m.mu.Lock()
		answered = m.now()
		if gone != nil {
			m.pendingDoneLocked(r.User)
			delete(m.waiters, tk)
			if !m.sched.Cancel(tk, gone) && tk.Err == nil {
				// Placed in the same instant the client left.
				m.sched.Release(tk.Res)
				m.mu.Unlock()
				m.kickPump()
			} else {
				m.mu.Unlock()
			}
			if errors.Is(gone, errUnavailable) {
				return nil, errUnavailable
			}
			return nil, gone
		}
	}
	m.pendingDoneLocked(r.User) // a session from here on, or nothing
	if errors.Is(tk.Err, errEndedByOperator) {
		m.mu.Unlock()
		m.log.Info("admission refused: the operator ended the subscriber's sessions while it waited", "title", t.ID, "user", r.User)
		return nil, errEndedByOperator
	}
	tk.Err = m.deadlineRefusalLocked(&tk.Req, m.now(), tk.Err) // at the queue deadline: why, not 453
	if errors.Is(tk.Err, errNoNodeInService) {
		return nil, m.noNodeInServiceRefusedLocked(&tk.Req, r.User, now, answered) // unlocks mu
	}
	if out := (nodesOutOfTouch{}); errors.As(tk.Err, &out) {
		return nil, m.outOfTouchRefusedLocked(out, &tk.Req, r.User, now, answered) // unlocks mu
	}
	if errors.Is(tk.Err, errNoNodeReporting) {
		return nil, m.noNodeRefusedLocked(&tk.Req, r.User, now, m.now()) // unlocks mu
	}
	if errors.Is(tk.Err, errNoSource) {
		return nil, m.noSourceRefusedLocked(&tk.Req, r.User, now, m.now()) // unlocks mu
	}
	if errors.Is(tk.Err, errOriginDown) {
		return nil, m.originDownRefusedLocked(&tk.Req, r.User, now, answered) // unlocks mu
	}
	if tk.Err != nil {
		site := ""
		if req.SiteOnly {
			site = req.Site
		}
		why, reason := m.refusalCauseLocked(t, site, req.Requires)
		m.mu.Unlock()
		m.capRefusals.log(m.log, m.now(), reason, slog.LevelInfo, "admission refused: no node could take it within the queue deadline: "+why, "title", t.ID, "user", r.User,
			"bitrate_bps", t.BitrateBps, "bytes", t.SizeBytes, "waited", m.now().Sub(now))
		switch reason {
		case refusedNoDiskRoom:
			return nil, errNoDiskRoom
		case refusedNoSource:
			return nil, errNoSource
		case refusedOriginChannels:
			return nil, errOriginBusy
		case refusedNoNodeReporting:
			return nil, errNoNodeReporting
		}
		return nil, errNoBandwidth
	}
	res := tk.Res
	now = m.now() // the no-show clock and the token start at the grant
	node := m.sched.Node(res.NodeID)
	s := &session{
		Session: store.Session{
			ID: newSessionID(), User: r.User, Title: t.ID, Node: res.NodeID, ClientAddr: r.Client,
			BitrateBps: res.Bitrate, Fill: res.Fill, State: store.StateAdmitted, Protocol: r.Protocol, AdmittedAt: now,
			Manager: m.holderID(),
		},
		res: res, reserved: true,
	}
	ns := m.nodes[res.NodeID]
	if ns == nil {
		// Cannot happen: lsm places only on nodes registered here.
		m.sched.Release(res)
		m.mu.Unlock()
		return nil, errUnavailable
	}
	m.addSessionLocked(s)
	endedHere = append(endedHere, m.moveLocked(moving, s, movedFor, now)...)
	ns.admissions++
	m.recordLocked(ns, t, now)
	if res.Fill {
		m.fillRoomLocked(ctx, ns, s, t, now)
	}
	g = m.grantLocked(s.Session, node)
	nodeSite := node.Site
	m.mu.Unlock()

	undo := func(why string) {
		m.mu.Lock()
		m.undoLocked(s, why)
		m.mu.Unlock()
		m.persistFront(s)
		m.kickPump()
	}
	fail := func(why string, err error) (*grant, error) {
		m.log.Error("admission undone", "session", s.ID, "why", why, "err", err)
		undo(why)
		switch {
		case errors.Is(err, errUnavailable):
			return nil, err // the store's: says why
		case why == "store":
			return nil, errStoreDown // a refused connection, say: not taken as stalled
		}
		return nil, errUnavailable
	}
	if r.Protocol == store.ProtoHTTP && g.HTTPAddr == "" {
		return fail("node has no HTTP address", fmt.Errorf("node %s", res.NodeID))
	}
	if err := m.persistFront(s); err != nil {
		return fail("store", err)
	}
	if ctx.Err() != nil {
		// The client closed its connection (a player zapping on, a box
		// switched off, a killed player): nothing failed here, as when
		// it leaves the queue, so not an error.
		m.log.Info("admission undone: the client left before its redirect", "session", s.ID, "title", t.ID, "user", r.User, "client", r.Client)
		undo("client left before its redirect")
		return nil, ctx.Err()
	}
	m.mu.Lock()
	ended := s.ended // its node died meanwhile
	m.mu.Unlock()
	if ended {
		return nil, errUnavailable
	}
	g.Token, err = m.signer.Sign(token.Claims{
		Session: s.ID, Title: t.ID, Node: res.NodeID, Client: r.ClientIP, User: r.User, Bitrate: res.Bitrate, Proto: r.Protocol, Door: r.Door, Readmitted: r.Readmitted,
	}, now, m.TokenTTL)
	if err != nil {
		return fail("token", err)
	}
	// The node keeps the title for the viewer on its way; told only now,
	// once nothing above undoes the admission (undone, its node would keep
	// the title until the deadline for a viewer who is not coming).
	m.mu.Lock()
	if ns := m.nodes[s.Node]; ns != nil && !s.ended {
		m.expectLocked(ns, s, now)
	}
	m.mu.Unlock()
	attrs := []any{"session", s.ID, "user", r.User, "title", t.ID, "node", res.NodeID,
		"bitrate_bps", res.Bitrate, "fill", res.Fill, "protocol", r.Protocol, "client", r.Client}
	if req.Site != "" {
		attrs = append(attrs, "site", req.Site, "node_site", nodeSite) // two sites: served across
	}
	if req.Site != "" || nodeSite != "" {
		siteAdmissions.WithLabelValues(req.Site, nodeSite).Inc()
	}
	m.log.Info("admitted", attrs...)
	return g, nil
}

// pendingDoneLocked takes one of user's requests out of the queued count
// (mu held): it became a session, or was refused, or left.
func (m *Manager) pendingDoneLocked(user string) {
	if n := m.userPending[user] - 1; n > 0 {
		m.userPending[user] = n
	} else {
		delete(m.userPending, user)
	}
}

// abandon ends a session whose redirect could not be delivered, and
// tells its node (EndSessionsCommand, its token refused there for a
// TokenTTL): the node was told of its viewer on its way (expectLocked)
// and would keep the title for it until the deadline, and would play a
// redirect that reached its client after all without a reservation.
func (m *Manager) abandon(id, why string) {
	m.mu.Lock()
	s := m.sessions[id]
	if s != nil {
		ended := s.ended
		m.endLocked(s, why)
		if ns := m.nodes[s.Node]; ns != nil && !ended {
			m.unexpectLocked(ns, s, why)
		}
	}
	m.mu.Unlock()
	if s != nil {
		m.persistFront(s)
		m.kickPump()
	}
}

// pumpLoop retries the admission queue when capacity may have freed (a
// kick) and at the earliest queue deadline, and wakes the waiters whose
// tickets finished.
func (m *Manager) pumpLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.kick:
		case <-timer.C:
		}
		m.mu.Lock()
		m.pumpLocked(m.now())
		next, ok := m.sched.NextDeadline()
		m.mu.Unlock()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if ok {
			timer.Reset(max(next.Sub(m.now()), 0))
		} else {
			timer.Reset(time.Hour)
		}
	}
}

// pumpLocked retries the admission queue at now, refuses the requests
// while no node reports to the manager (errNoNodeReporting), those no
// node could take unless an operator acts (errNoNodeInService) and those
// no node can ever get the title for (errNoSource), and wakes
// the waiters whose tickets finished (mu held).
func (m *Manager) pumpLocked(now time.Time) {
	for _, tk := range m.sched.Pump(now) {
		if ch, ok := m.waiters[tk]; ok {
			delete(m.waiters, tk)
			close(ch)
		} else if tk.Err == nil {
			m.sched.Release(tk.Res) // nobody waits for it any more
		}
	}
	m.refuseHopelessQueuedLocked(now)
}

// fillRoomLocked is the storage hook of a fill placement (mu held, and
// released while it waits): the fill streams to its viewer whatever room
// there is, so it evicts what can be evicted, never a title in use or
// pinned. When that is not enough, the manager's view may be stale (fills
// that just completed still look in use), and the node would choose
// victims by its own policy: it waits for the node's next load report
// (at most two heartbeat intervals, before the client is answered) and
// tries once more with the fresh view. The prefetches the node stops for
// the fill (preemptibleBytesLocked) count as room: no report shows it
// before the viewer reaches the node.
func (m *Manager) fillRoomLocked(ctx context.Context, ns *nodeState, s *session, t store.Title, now time.Time) {
	ok, err := m.makeRoomLocked(ns, t, now, false, m.preemptibleBytesLocked(ns, t.ID))
	ns.diskFree -= t.SizeBytes
	if err != nil {
		m.log.Warn("no eviction for a fill", "node", ns.id, "title", t.ID, "err", err)
	}
	if ok || err != nil {
		return
	}
	wait := ns.reportWaiter()
	m.mu.Unlock()
	timer := time.NewTimer(2 * m.sched.Config.HeartbeatInterval)
	select {
	case <-wait:
	case <-timer.C:
	case <-ctx.Done():
	case <-m.ctx.Done():
	}
	timer.Stop()
	m.mu.Lock()
	// The report counted this fill (its session is admitted): what is
	// still missing is below zero.
	if s.ended || ns.diskFree >= 0 {
		return
	}
	if _, err := m.reclaimLocked(ns, t.ID, -ns.diskFree, m.now(), false, m.preemptibleBytesLocked(ns, t.ID)); err != nil {
		m.log.Warn("no eviction for a fill", "node", ns.id, "title", t.ID, "err", err)
	}
}

// requiresLocked is what a node must offer to take the viewer of r (mu
// held): RTSPS for an RTSPS viewer (its player cannot follow a redirect
// to plain RTSP), an HTTP address for an HTTP viewer, and HTTPS too
// behind an HTTPS front door (a browser on an https:// page refuses a
// redirect to http://, and the token in the URL would travel in clear),
// and UDP for a SETUP that offers only UDP (r.NeedsUDP: a node with
// tcp_only would answer it 461).
func (m *Manager) requiresLocked(r admitRequest) lsm.Feature {
	var f lsm.Feature
	if r.NeedsUDP {
		f = lsm.FeatureUDP
	}
	switch r.Protocol {
	case store.ProtoRTSPS:
		return f | lsm.FeatureRTSPS
	case store.ProtoHTTP:
		if m.HTTPTLS != nil {
			return f | lsm.FeatureHTTP | lsm.FeatureHTTPS
		}
		return f | lsm.FeatureHTTP
	}
	return f
}
