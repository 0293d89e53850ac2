package vodnode

import (
	"time"

	"vodcluster/proto/token"
	pb "vodcluster/proto/vodcluster/v1"
)

// defaultDescribeGrace is how long after an RTSP connection closes the node
// waits for a SETUP of an admission session that was only DESCRIBEd on it
// (a player that probes a title for its SDP and hangs up, a box that gave
// up) before it ends the admission session: the manager then releases the
// reservation, and the subscriber's session count, at once instead of at
// its no-show timeout (token_ttl + 10 s). A client that DESCRIBEs on one
// connection and SETUPs on another does so within milliseconds.
// Node.describeGrace, when set (by tests), replaces it for one node.
const defaultDescribeGrace = 10 * time.Second

// described is an admission session whose DESCRIBE the node answered on a
// connection.
type described struct {
	title   string
	expires time.Time // the token's expiry
}

// noteDescribed remembers that c answered a DESCRIBE of admission session
// sid (title, token expiry).
func (c *rtspConn) noteDescribed(sid, title string, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.described == nil {
		c.described = map[string]described{}
	}
	c.described[sid] = described{title, expires}
}

// abandonDescribed arms, when c closes, the end of the admission sessions
// DESCRIBEd on it: each one that no SETUP made live on any connection,
// that no open connection has DESCRIBEd too, and that did not end
// otherwise within the grace (defaultDescribeGrace) is ended
// (endDescribedOnly).
func (c *rtspConn) abandonDescribed() {
	c.mu.Lock()
	ds := c.described
	c.described = nil
	c.mu.Unlock()
	if len(ds) == 0 {
		return
	}
	grace := c.n.describeGrace
	if grace <= 0 {
		grace = defaultDescribeGrace
	}
	time.AfterFunc(grace, func() {
		for sid, d := range ds {
			c.n.endDescribedOnly(sid, d)
		}
		if f := c.n.describedSettled; f != nil {
			f() // a test's hook: this node's closed connection was looked at
		}
	})
}

// endDescribedOnly ends admission session sid, DESCRIBEd on a connection
// that closed the grace ago, unless a session of it is live, its token is
// spent (it played, or was refused, ended or replaced) or expired, or a connection
// still open DESCRIBEd it too (its SETUP may yet come; that connection
// arms its own end when it closes): the token is spent and the manager
// hears ENDED, reason "no-show: described only".
func (n *Node) endDescribedOnly(sid string, d described) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	if _, live := n.live[sid]; live {
		n.mu.Unlock()
		return
	}
	if _, used := n.used[sid]; used {
		n.mu.Unlock()
		return
	}
	if n.describedOpenLocked(sid) {
		n.mu.Unlock()
		return
	}
	if time.Now().After(d.expires.Add(token.ClockSkew)) {
		// The token can start nothing any more, and the node no longer
		// remembers whether it played (spent tokens are forgotten once
		// expired): a session of it has sent its own ENDED, and the
		// manager ends an admission that never showed at its no-show
		// timeout.
		n.mu.Unlock()
		return
	}
	n.spendLocked(sid, usedUntil(d.expires, n.SessionTimeout))
	n.mu.Unlock()
	const reason = "no-show: described only, connection closed before SETUP"
	n.log.Info("session ended", "sid", sid, "title", d.title, "reason", reason)
	if n.mgr != nil {
		n.mgr.report(&pb.SessionEvent{
			NodeId: n.ID, SessionId: sid, TitleId: d.title, Kind: pb.SessionEvent_KIND_ENDED,
			Reason: reason, AtUnixMs: time.Now().UnixMilli(),
		})
	}
}

// describedOpenLocked reports whether a connection still open DESCRIBEd
// admission session sid (n.mu held; it takes each connection's mu, never
// held while n.mu is taken).
func (n *Node) describedOpenLocked(sid string) bool {
	for c := range n.conns {
		c.mu.Lock()
		_, ok := c.described[sid]
		c.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}
