package vodnode

import (
	"errors"
	"net/netip"
	"strconv"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/token"
)

// requestTarget parses a request URL into its target. A missing token is a
// 401, an unknown path a 404.
func requestTarget(u *base.URL) (target, *rtspError) {
	if u == nil {
		return target{}, rtspErr(base.StatusNotFound, "%v", errNoPath)
	}
	path := u.Path
	if u.RawPath != "" {
		path = u.RawPath
	}
	tg, err := parseTarget(path, u.RawQuery)
	switch {
	case errors.Is(err, errNoToken):
		return tg, unauthorized(errNoToken.Error())
	case err != nil:
		return tg, rtspErr(base.StatusNotFound, "%v", err)
	}
	return tg, nil
}

// verifyStart checks the token of a request that starts a session
// (DESCRIBE, SETUP without Session) over proto ("rtsp", "rtsps", "http"):
// valid signature, unexpired, issued for this title on this node to this
// client over this protocol (token.Claims.CheckProto), and not already
// used here. A token spent here (its session ended: TEARDOWN, timeout,
// refusal), expired or not, that names the RTSP front door its viewer
// asked (token.Claims.Door) gets a 302 there (spentAnswer); 401 otherwise.
func (n *Node) verifyStart(tg target, client netip.Addr, proto string) (*token.Claims, *rtspError) {
	ip := ""
	if client.IsValid() {
		ip = client.String()
	}
	c, err := n.signer.Verify(tg.Token, time.Now(), tg.Title, n.ID, ip)
	expired := errors.Is(err, token.ErrExpired)
	if expired {
		err = c.Check(tg.Title, n.ID, ip) // Verify checks the scope of an unexpired token only
	}
	if err == nil {
		err = c.CheckProto(proto)
	}
	switch {
	case errors.Is(err, token.ErrScope):
		return nil, unauthorized(err.Error())
	case err != nil:
		return nil, unauthorized("invalid admission token")
	case n.tokenUsed(c.Session):
		return nil, n.spentAnswer(c, tg, proto)
	case expired:
		return nil, unauthorized("admission token expired")
	}
	return c, nil
}

// spentAnswer answers a request that starts a session with token c, spent
// here: over RTSP, when c names its front door (token.Claims.Door, checked
// again with token.ValidDoor), 302 Moved Temporarily to the title's URL
// there (the URL tg names, /es and the track kept), where the viewer is
// admitted anew: a re-admission ticket in its query (token.Signer.Readmit:
// the first time only, and not for a session itself admitted so) names
// the subscriber, so that a player that kept no credentials (they
// were in the URL it was first given, or a subscriber token in its
// query) needs none. A player that reconnects to the node's URL it was
// redirected to, rather than to the one it was given, gets the front door
// back: GStreamer's rtspsrc, falling back from UDP to TCP when no RTP
// reaches it, tears its session down and asks the node's URL again. The
// token is known here, so it is not a fresh one a node whose clock runs
// ahead takes for expired (which would send its viewer round and round).
// Otherwise 401 (reasonUsed), and for a session the manager ended
// (spentToken.byManager: an operator's cut is not undone by the node)
// reasonEndedByManager.
func (n *Node) spentAnswer(c *token.Claims, tg target, proto string) *rtspError {
	redirect := proto != "http" && token.ValidDoor(c.Door)
	ordered, first := n.ticketFor(c.Session, redirect)
	switch {
	case ordered:
		return unauthorized(reasonEndedByManager)
	case !redirect:
		return unauthorized(reasonUsed)
	}
	loc := c.Door + "/vod/" + tg.Title
	if tg.ES {
		loc += "/es"
	}
	if tg.Track >= 0 {
		loc += "/trackID=" + strconv.Itoa(tg.Track)
	}
	if first {
		if ticket, err := n.signer.Readmit(c, time.Now()); err == nil {
			loc += "?readmit=" + ticket // its subscriber, without credentials
		}
	}
	e := rtspErr(base.StatusFound, "admission token already used on this node (its session ended): ask the front door again")
	e.header = base.Header{"Location": base.HeaderValue{loc}}
	return e
}

// verifyInSession checks the token of a request inside session s: a valid
// signature and s's admission session (expiry is not checked: a film
// outlives its token).
func (n *Node) verifyInSession(tg target, s *session) *rtspError {
	c, err := n.signer.Parse(tg.Token)
	if err != nil {
		return unauthorized("invalid admission token")
	}
	if c.Session != s.sid {
		return unauthorized("admission token of another session")
	}
	if tg.Title != s.title {
		return rtspErr(base.StatusNotFound, "session %s plays %s, not %s", s.id, s.title, tg.Title)
	}
	return nil
}

// sessionOf returns the session named by the request's Session header,
// after checking the request's token against it. 454 when the header is
// missing or names no live session.
func (c *rtspConn) sessionOf(req *base.Request) (*session, target, *rtspError) {
	tg, rerr := requestTarget(req.URL)
	id := sessionHeader(req)
	if id == "" {
		return nil, tg, rtspErr(base.StatusSessionNotFound, "missing Session header")
	}
	s := c.n.lookupSession(id)
	if s == nil {
		return nil, tg, rtspErr(base.StatusSessionNotFound, "session %s not found", id)
	}
	if rerr != nil {
		return nil, tg, rerr
	}
	if err := c.n.verifyInSession(tg, s); err != nil {
		return nil, tg, err
	}
	s.touch(time.Now())
	return s, tg, nil
}
