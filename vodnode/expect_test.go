package vodnode

import (
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// The manager's ExpectCommand keeps a viewer's title from the node's own
// eviction until the viewer arrives (an RTSP SETUP, an HTTP request), its
// start is refused for good, the manager ends it (EndSessionsCommand), or
// its deadline passes; one past its deadline is ignored, and a SETUP
// refused for its Transport (which the player may retry) keeps it.
func TestExpectCommand(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.ManagerAddr = maddr; n.HeartbeatInterval = 50 * time.Millisecond })
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	expect := func(sid, title string, until time.Time) {
		n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Expect{Expect: &pb.ExpectCommand{
			SessionId: sid, TitleId: title, UntilUnixMs: until.UnixMilli()}}})
	}
	want := func(what string, counts map[string]int) {
		t.Helper()
		for title, c := range counts {
			if got := n.ExpectedViewers(title); got != c {
				t.Fatalf("%s: %d viewers expected for %s, want %d", what, got, title, c)
			}
		}
	}
	soon := time.Now().Add(time.Minute)
	expect("rtsp-1", "sample-001", soon)
	expect("http-1", "sample-002", soon)
	expect("ended-1", "sample-003", soon)
	expect("refused-1", "sample-004", soon)
	expect("late-1", "sample-005", time.Now().Add(-time.Second))
	expect("short-1", "sample-006", time.Now().Add(3*time.Second))
	want("sent", map[string]int{"sample-001": 1, "sample-002": 1, "sample-003": 1, "sample-004": 1, "sample-005": 0, "sample-006": 1})

	// RTSP: a SETUP without Transport (400, retryable) keeps it; the
	// session set up ends it.
	c := dialRTSP(t, n)
	u := nodeURL(n, mint(t, "rtsp-1", "sample-001", "node-1", "", time.Minute), "sample-001")
	if res := c.do("SETUP", u+"/trackID=0"); res.StatusCode != 400 {
		t.Fatalf("SETUP without Transport: %s", statusLine(res))
	}
	if res := c.do("SETUP", u+"/trackID=0", "Transport", " "); res.StatusCode != 400 { // it was 461
		t.Fatalf("SETUP with an empty Transport: %s", statusLine(res))
	}
	want("after a SETUP to retry", map[string]int{"sample-001": 1})
	c.play(u)
	want("RTSP viewer arrived", map[string]int{"sample-001": 0, "sample-002": 1})

	// HTTP: the first request ends it.
	res, b := get(t, httpURL(n, mint(t, "http-1", "sample-002", "node-1", "", time.Minute), "sample-002.ts"), "Range", "bytes=0-187")
	if res.StatusCode != http.StatusPartialContent || len(b) != 188 {
		t.Fatalf("HTTP range: %d, %d bytes", res.StatusCode, len(b))
	}
	want("HTTP viewer arrived", map[string]int{"sample-002": 0, "sample-003": 1})

	// The manager ends a viewer on its way.
	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{
		SessionIds: []string{"ended-1"}, Reason: "test"}}})
	want("ended by the manager", map[string]int{"sample-003": 0, "sample-004": 1})

	// A start refused for good (the node drains: 503) spends the token.
	n.SetDraining(true)
	u = nodeURL(n, mint(t, "refused-1", "sample-004", "node-1", "", time.Minute), "sample-004")
	if res := dialRTSP(t, n).do("SETUP", u+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 503 {
		t.Fatalf("SETUP while draining: %s", statusLine(res))
	}
	n.SetDraining(false)
	want("refused", map[string]int{"sample-004": 0})

	// The deadline passes.
	waitFor(t, 10*time.Second, "short-1's deadline", func() bool { return n.ExpectedViewers("sample-006") == 0 })
}

// An ExpectCommand that comes after its viewer arrived (the command and
// the viewer race from the front door's redirect; a new token for the
// same viewer is announced again) keeps nothing: the session is live
// (its title held for it), or it ended or was refused here (its token
// spent), and the viewer is not coming.
func TestExpectAfterArrival(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) { n.ManagerAddr = maddr; n.HeartbeatInterval = 50 * time.Millisecond })
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	expect := func(what, sid, title string, want int) {
		t.Helper()
		n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Expect{Expect: &pb.ExpectCommand{
			SessionId: sid, TitleId: title, UntilUnixMs: time.Now().Add(time.Minute).UnixMilli()}}})
		if got := n.ExpectedViewers(title); got != want {
			t.Fatalf("%s: %d viewers expected for %s, want %d", what, got, title, want)
		}
	}

	// RTSP: set up and playing, then torn down.
	c := dialRTSP(t, n)
	u := nodeURL(n, mint(t, "rtsp-1", "sample-001", "node-1", "", time.Minute), "sample-001")
	rs := c.play(u)
	expect("RTSP viewer playing", "rtsp-1", "sample-001", 0)
	if res := c.do("TEARDOWN", u, "Session", rs); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 5*time.Second, "rtsp-1's token spent", func() bool { return n.tokenUsed("rtsp-1") })
	expect("RTSP viewer gone", "rtsp-1", "sample-001", 0)

	// HTTP: its session live after a request.
	res, b := get(t, httpURL(n, mint(t, "http-1", "sample-002", "node-1", "", time.Minute), "sample-002.ts"), "Range", "bytes=0-187")
	if res.StatusCode != http.StatusPartialContent || len(b) != 188 {
		t.Fatalf("HTTP range: %d, %d bytes", res.StatusCode, len(b))
	}
	expect("HTTP viewer live", "http-1", "sample-002", 0)

	// Refused for good (the node drains): its token spent.
	n.SetDraining(true)
	u = nodeURL(n, mint(t, "refused-1", "sample-003", "node-1", "", time.Minute), "sample-003")
	if res := dialRTSP(t, n).do("SETUP", u+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 503 {
		t.Fatalf("SETUP while draining: %s", statusLine(res))
	}
	n.SetDraining(false)
	expect("refused", "refused-1", "sample-003", 0)

	// One not yet there is kept.
	expect("on its way", "coming-1", "sample-004", 1)
}
