package vodnode

import (
	"fmt"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// One admission token, one viewer. The manager reserves a title's bitrate
// for one admission session (the token's sid) and redirects one client
// with its token; the node lets that token start one session:
//
//   - while the session is live (set up over RTSP, or HTTP requests in
//     progress or recent) the token starts no other one: another RTSP
//     connection's DESCRIBE or SETUP, or an HTTP request when the session
//     is RTSP (and the reverse) get 401; the viewer's own DESCRIBEs on its
//     connection and its further HTTP requests (ranges, segments) are that
//     same session, and a new SETUP without Session on the connection
//     replaces the session (ffmpeg, when no UDP reaches it, PAUSEs and sets
//     up again over TCP): never two at once;
//   - once the session ended, or the node refused to start it, the token
//     is spent here until it expires (401);
//   - a refusal after the token was accepted (453, 503, 404, ...) is
//     reported to the manager as ENDED with the status, so that it
//     releases the reservation at once instead of at its no-show timeout.
//     A SETUP refused for its Transport (461, or 400 without one) may be
//     retried on the same connection with another transport list (ffmpeg
//     does after a 461): it is reported setupRetryGrace later, or when the
//     connection closes, unless a SETUP of the token succeeded meanwhile.

// Reasons of the 401s of the token rules.
const (
	reasonLive = "admission session already playing on this node (one token, one viewer)"
	reasonUsed = "admission token already used on this node (its session ended or was refused)"
	// reasonEndedByManager: a token spent by the manager's order
	// (EndSessions), which the node does not send back to the front door.
	reasonEndedByManager = "admission session ended by the manager (the operator, or a newer session of the viewer)"
)

// claim makes owner (a *session or *httpSession) the live session of
// admission session sid. 401 when the token is spent here or sid already
// has a live session.
func (n *Node) claim(sid string, owner any) *rtspError {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.used[sid]; ok {
		return unauthorized(reasonUsed)
	}
	if _, ok := n.live[sid]; ok {
		return unauthorized(reasonLive)
	}
	n.live[sid] = owner
	n.usedDirty = true // saved as spent (saveUsedTokens), in case of a crash
	return nil
}

// liveOn returns the live RTSP session of admission session sid set up
// over connection c, nil when there is none.
func (n *Node) liveOn(sid string, c *rtspConn) *session {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.live[sid].(*session); ok && s.conn == c && !s.ended {
		return s
	}
	return nil
}

// liveElsewhere returns a 401 when sid has a live session that is not an
// RTSP session set up over connection c (a DESCRIBE by the viewer itself
// is fine).
func (n *Node) liveElsewhere(sid string, c *rtspConn) *rtspError {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch o := n.live[sid].(type) {
	case nil:
		return nil
	case *session:
		if o.conn == c {
			return nil
		}
	}
	return unauthorized(reasonLive)
}

// tokenUsed reports whether admission session sid already ended here.
func (n *Node) tokenUsed(sid string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.used[sid]
	return ok
}

// spentToken is what the node keeps of an admission session that ended
// here (Node.used), kept in usedTokensFile.
type spentToken struct {
	until time.Time // when its token may be forgotten (refused anyway after)
	// byManager: the manager ended it (EndSessions: an operator's end, a
	// viewer moved or superseded): its token is refused 401, not sent
	// back to the front door (spentAnswer).
	byManager bool
	// ticketed: its viewer was sent a re-admission ticket (ticketFor):
	// one each.
	ticketed bool
}

// endedByManager marks the spent tokens among sids as ended by the
// manager's order (spentToken.byManager): a viewer the operator cut off, or
// that the manager moved or superseded, is not sent back to the front
// door by the node (spentAnswer). The manager's orders to end sessions
// carry a time to refuse their tokens until, and refuseTokens marks them
// first; this marks those of an order without one, once ended.
func (n *Node) endedByManager(sids []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, sid := range sids {
		if e, ok := n.used[sid]; ok {
			e.byManager = true
			n.used[sid] = e
		}
	}
}

// usedUntil is how long an ended admission session is remembered: until
// its token expires (it is refused anyway after), at least timeout.
func usedUntil(expires time.Time, timeout time.Duration) time.Time {
	expires = expires.Add(token.ClockSkew) // still accepted until then
	if min := time.Now().Add(timeout); expires.Before(min) {
		return min
	}
	return expires
}

// refuseTokens spends the tokens of admission sessions sids until until
// (plus the clock skew tokens are allowed), as ended by the manager
// (spentToken.byManager, in the same hold of n.mu: no request finds one spent
// and not so marked): a viewer the manager ended before it reached the
// node is refused here (401, token spent).
func (n *Node) refuseTokens(sids []string, until time.Time) {
	until = until.Add(token.ClockSkew)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, sid := range sids {
		n.spendLocked(sid, until)
		e := n.used[sid]
		e.byManager = true
		n.used[sid] = e
	}
}

// ticketFor reads, in one hold of n.mu, whether admission session sid,
// spent here, was ended by the manager (spentToken.byManager), and, when
// not and redirect is set, whether its viewer has had no re-admission
// ticket yet (spentToken.ticketed), counting this one (spentAnswer): a
// viewer sent back to the front door again gets none, and needs its
// credentials. A session no longer in used (the janitor dropped it
// meanwhile) gets none.
func (n *Node) ticketFor(sid string, redirect bool) (ordered, first bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.used[sid]
	switch {
	case e.byManager:
		return true, false
	case !ok || !redirect || e.ticketed:
		return false, false
	}
	e.ticketed = true
	n.used[sid] = e
	n.usedDirty = true // kept in usedTokensFile
	return false, true
}

// spentLocked is the 401 of a token spent here (n.mu held): ended by the
// manager (spentToken.byManager) or otherwise.
func (n *Node) spentLocked(sid string) *rtspError {
	if n.used[sid].byManager {
		return unauthorized(reasonEndedByManager)
	}
	return unauthorized(reasonUsed)
}

// spendLocked spends the token of admission session sid until until, or
// longer when it was spent so already (refuseTokens); under n.mu.
func (n *Node) spendLocked(sid string, until time.Time) {
	if e, ok := n.used[sid]; !ok || e.until.Before(until) {
		e.until = until
		n.used[sid] = e
		n.usedDirty = true
	}
}

// refuseStart ends an admission session that the node refused to start
// with e, after its token was accepted: owner's claim (nil for a DESCRIBE,
// which claims nothing) is dropped, the token is spent, and the manager
// hears ENDED with the status so that it releases the reservation. When
// another session of sid is live, nothing is spent or reported: that
// session goes on.
func (n *Node) refuseStart(sid, title string, expires time.Time, owner any, e *rtspError) {
	n.mu.Lock()
	if o, ok := n.live[sid]; ok && o != owner {
		n.mu.Unlock()
		return
	}
	delete(n.live, sid)
	if hs, ok := owner.(*httpSession); ok && n.httpSessions[sid] == hs {
		delete(n.httpSessions, sid)
	}
	n.spendLocked(sid, usedUntil(expires, n.SessionTimeout))
	n.mu.Unlock()
	n.store.Unexpect(sid) // its token is spent here: that viewer comes no more
	reason := fmt.Sprintf("refused: %d %s", int(e.code), e.reason)
	n.log.Info("session refused", "sid", sid, "title", title, "reason", reason)
	if n.mgr != nil {
		n.mgr.report(&pb.SessionEvent{
			NodeId: n.ID, SessionId: sid, TitleId: title, Kind: pb.SessionEvent_KIND_ENDED,
			Reason: reason, AtUnixMs: time.Now().UnixMilli(),
		})
	}
}

// release drops owner's claim on sid and spends the token; under n.mu.
func (n *Node) releaseLocked(sid string, owner any, expires time.Time) {
	if n.live[sid] == owner {
		delete(n.live, sid)
	}
	n.spendLocked(sid, usedUntil(expires, n.SessionTimeout))
}

// setupRetryGrace is how long a SETUP refused for its Transport may be
// retried on its connection before the refusal ends the admission session.
const setupRetryGrace = 2 * time.Second

// retryable reports whether a SETUP refused with e may be retried on its
// connection with another request: another Transport header (461, 400),
// a track's URL instead of the aggregate one or a track that exists
// (fixable: 459, 404). A refusal for the node's sake (capacity, the
// origin, an unknown title, the token) is final.
func retryable(e *rtspError) bool {
	return e.fixable || e.code == base.StatusUnsupportedTransport || e.code == base.StatusBadRequest
}

// pendingRefusal is a SETUP refused for its Transport, waiting for a
// retry on its connection.
type pendingRefusal struct {
	title   string
	expires time.Time
	err     *rtspError
	timer   *time.Timer
}

// deferRefusal drops s's claim and settles the refusal e setupRetryGrace
// later unless a SETUP of s's token succeeds on c first.
func (c *rtspConn) deferRefusal(s *session, e *rtspError) {
	c.n.mu.Lock()
	if c.n.live[s.sid] == any(s) {
		delete(c.n.live, s.sid)
	}
	c.n.mu.Unlock()
	p := &pendingRefusal{title: s.title, expires: s.expires, err: e}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.pending[s.sid]; old != nil {
		old.timer.Stop()
	}
	c.pending[s.sid] = p
	sid := s.sid
	p.timer = time.AfterFunc(setupRetryGrace, func() { c.settle(sid, p) })
}

// settle ends the admission session of a refusal nobody retried (p nil:
// whatever refusal of sid is pending).
func (c *rtspConn) settle(sid string, p *pendingRefusal) {
	c.mu.Lock()
	cur := c.pending[sid]
	if cur == nil || (p != nil && cur != p) {
		c.mu.Unlock()
		return
	}
	delete(c.pending, sid)
	c.mu.Unlock()
	cur.timer.Stop()
	c.n.refuseStart(sid, cur.title, cur.expires, nil, cur.err)
}

// retried forgets the pending refusal of sid: a SETUP of it succeeded.
func (c *rtspConn) retried(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[sid]; p != nil {
		p.timer.Stop()
		delete(c.pending, sid)
	}
}

// settleAll settles the connection's pending refusals (it closed).
func (c *rtspConn) settleAll() {
	c.mu.Lock()
	sids := make([]string, 0, len(c.pending))
	for sid := range c.pending {
		sids = append(sids, sid)
	}
	c.mu.Unlock()
	for _, sid := range sids {
		c.settle(sid, nil)
	}
}

// endAdmission ends the live session of admission session sid, RTSP or
// HTTP, with reason (an RTSP client hears an RTCP BYE with it on each
// track, MP2T or elementary streams); false when none is live. A session
// still being set up is left to its setup, which refuses it when its
// token was spent meanwhile (refuseTokens first).
func (n *Node) endAdmission(sid, reason string) bool {
	n.mu.Lock()
	o := n.live[sid]
	switch s := o.(type) {
	case *session:
		if n.sessions[s.id] != s {
			o = nil // its SETUP is in progress (addSession checks the token)
		}
	case *httpSession:
		if s.t() == nil {
			o = nil // its first request is setting it up (startHTTPSession checks the token)
		}
	}
	n.mu.Unlock()
	switch o := o.(type) {
	case *session:
		n.abortSession(o, reason)
		return true
	case *httpSession:
		n.endHTTPSession(o, reason)
		return true
	}
	return false
}
