package vodnode

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestDescribeOnlyEndsAfterGrace: a client that DESCRIBEs a title with
// its token and hangs up without a SETUP has its admission session ended
// the grace after the connection closed (ENDED, reason no-show, and
// the token spent), so the manager releases the reservation then rather
// than at its no-show timeout. A client that DESCRIBEs on one connection
// and SETUPs on another within the grace plays on; one that plays and
// closes its connection (UDP) is not ended for it.
func TestDescribeOnlyEndsAfterGrace(t *testing.T) {
	// The grace has room for d-other's new connection and SETUP on a
	// loaded machine (its SETUP after the grace is 401).
	n, m, settled := describeNode(t, 2*time.Second, nil)
	url := func(sid string) string {
		return nodeURL(n, mint(t, sid, "sample-001", "node-1", "", time.Minute), "sample-001")
	}

	probe, other, udp := url("d-probe"), url("d-other"), url("d-udp")
	c := dialRTSP(t, n)
	for _, u := range []string{probe, other, udp} {
		if res := c.do("DESCRIBE", u); res.StatusCode != 200 {
			t.Fatalf("DESCRIBE: %s", statusLine(res))
		}
	}
	// d-udp plays over UDP on this connection, which then closes.
	res := c.do("SETUP", udp+"/trackID=0", "Transport", "RTP/AVP;unicast;client_port=9700-9701")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP over UDP: %s", statusLine(res))
	}
	if res := c.do("PLAY", udp+"/", "Session", sessionID(res)); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	c.c.Close()
	// d-other SETUPs on a new connection at once.
	id := dialRTSP(t, n).play(other)

	settled(t) // the closed connection's sessions were looked at
	waitFor(t, 5*time.Second, "ENDED of the DESCRIBE-only session", func() bool {
		return m.event("d-probe", pb.SessionEvent_KIND_ENDED) != nil
	})
	if e := m.event("d-probe", pb.SessionEvent_KIND_ENDED); !strings.HasPrefix(e.GetReason(), "no-show") || e.GetTitleId() != "sample-001" {
		t.Errorf("ENDED %+v, want reason no-show", e)
	}
	if !n.tokenUsed("d-probe") {
		t.Error("the DESCRIBE-only token is not spent")
	}
	if res := dialRTSP(t, n).do("SETUP", probe+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 401 {
		t.Errorf("SETUP after the grace: %s, want 401", statusLine(res))
	}
	// The others were looked at with it and not ended.
	for _, sid := range []string{"d-other", "d-udp"} {
		if n.tokenUsed(sid) {
			t.Errorf("%s: token spent", sid)
		}
		if e := m.event(sid, pb.SessionEvent_KIND_ENDED); e != nil {
			t.Errorf("%s ended: %+v", sid, e)
		}
	}
	if n.lookupSession(id) == nil {
		t.Error("the session set up on another connection is gone")
	}
}

// TestDescribeOnlyKeptWhileDescribedElsewhere: a DESCRIBE-only session
// whose connection closed is not ended while another connection, still
// open, has DESCRIBEd it too (a player that probed the SDP on one
// connection and opened its own): that connection's SETUP may come after
// the grace of the first, and ends it itself if it closes without one.
func TestDescribeOnlyKeptWhileDescribedElsewhere(t *testing.T) {
	n, _, settled := describeNode(t, 200*time.Millisecond, nil)
	u := nodeURL(n, mint(t, "d-twice", "sample-001", "node-1", "", time.Minute), "sample-001")

	first := dialRTSP(t, n)
	if res := first.do("DESCRIBE", u); res.StatusCode != 200 {
		t.Fatalf("DESCRIBE: %s", statusLine(res))
	}
	second := dialRTSP(t, n)
	if res := second.do("DESCRIBE", u); res.StatusCode != 200 {
		t.Fatalf("DESCRIBE on the second connection: %s", statusLine(res))
	}
	first.c.Close()
	settled(t) // the closed connection's sessions were looked at
	if n.tokenUsed("d-twice") {
		t.Error("token spent while an open connection had DESCRIBEd it")
	}
	if res := second.do("SETUP", u+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 200 {
		t.Errorf("SETUP on the open connection after the first one's grace: %s, want 200", statusLine(res))
	}
}

// TestDescribedThenPlayedNotEndedAgain: a session DESCRIBEd and played on
// a connection that closes after its token's spent entry was forgotten
// (its token expired: the node keeps spent tokens only that long) is not
// reported ended a second time as a no-show. (ffmpeg seeking past the end
// got 457, its session timed out, its connection closed a minute later,
// and 10 s after that the node reported "no-show: described only" for a
// session the manager had already ended: NOT_FOUND and a warning.)
func TestDescribedThenPlayedNotEndedAgain(t *testing.T) {
	// The grace is past the token's expiry and clock skew; the session
	// timeout one a loaded machine's request round trips stay well within
	// (the session is silent between its SETUP and TEARDOWN), and below
	// the 2 s the token is still accepted for (the spent entry's life).
	n, m, settled := describeNode(t, 3*time.Second, func(n *Node) { n.SessionTimeout = time.Second })
	// Expired 3 s ago: still accepted for the clock skew (5 s) that is left.
	u := nodeURL(n, mint(t, "d-played", "sample-001", "node-1", "", -3*time.Second), "sample-001")
	c := dialRTSP(t, n)
	if res := c.do("DESCRIBE", u); res.StatusCode != 200 {
		t.Fatalf("DESCRIBE: %s", statusLine(res))
	}
	res := c.do("SETUP", u+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	if res := c.do("TEARDOWN", u+"/", "Session", sessionID(res)); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	c.c.Close()
	settled(t) // the closed connection's sessions were looked at
	// A session played and ended after the look: its ENDED goes out
	// after anything the look sent (the node sends events in order).
	after := nodeURL(n, mint(t, "d-after", "sample-001", "node-1", "", time.Minute), "sample-001")
	c2 := dialRTSP(t, n)
	res = c2.do("SETUP", after+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	c2.do("TEARDOWN", after+"/", "Session", sessionID(res))
	waitFor(t, 10*time.Second, "the later session's ENDED", func() bool { return m.event("d-after", pb.SessionEvent_KIND_ENDED) != nil })
	if es := m.eventsOf("d-played", pb.SessionEvent_KIND_ENDED); len(es) != 1 || strings.HasPrefix(es[0].GetReason(), "no-show") {
		t.Errorf("ENDED events %v, want the TEARDOWN's alone", es)
	}
}

// describeNode starts a node reporting to a fake manager (its first report
// awaited) whose DESCRIBE-only sessions are looked at grace after their
// connection closes; configure, when set, sets more. settled waits (at
// most 20 s) until the node has looked at a closed connection's sessions.
func describeNode(t *testing.T, grace time.Duration, configure func(*Node)) (n *Node, m *fakeManager, settled func(*testing.T)) {
	t.Helper()
	looked := make(chan struct{}, 4)
	m = newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n = startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.describeGrace = grace
		n.describedSettled = func() { looked <- struct{}{} }
		if configure != nil {
			configure(n)
		}
	})
	waitFor(t, 5*time.Second, "the first report", func() bool { return m.lastReport() != nil })
	return n, m, func(t *testing.T) {
		t.Helper()
		select {
		case <-looked:
		case <-time.After(20 * time.Second):
			t.Fatal("the closed connection's DESCRIBE-only sessions were never looked at")
		}
	}
}
