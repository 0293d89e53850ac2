package acm

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// endCommand waits (at most waitForMin) for an EndSessionsCommand to reach n.
func (n *fakeNode) endCommand(t *testing.T) *pb.EndSessionsCommand {
	t.Helper()
	deadline := time.After(waitForMin)
	for {
		select {
		case c := <-n.cmds:
			if end := c.GetEndSessions(); end != nil {
				return end
			}
		case <-deadline:
			t.Fatalf("no EndSessions command reached %s within %v", n.id, waitForMin)
			return nil
		}
	}
}

// TestOperatorEndsSessions: vodctl sessions end --user ends every session
// of the subscriber at once: out of the table, reservations released, the
// node told (with the reason, and until when to refuse their tokens), the
// other subscriber's session untouched; the session record of the one
// that never reached the node is written at once, without bytes (the
// node refuses its token), that of the one that played waits for its
// node's ENDED and carries its bytes. Bad requests are refused.
func TestOperatorEndsSessions(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = records })
	n := e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	for _, d := range []struct{ user, title string }{{"demo", "t1"}, {"demo", "t2"}, {"kid", "t3"}} {
		if res := e.describe(d.user, d.user, d.title); res.StatusCode != base.StatusFound {
			t.Fatalf("%s %s: %d", d.user, d.title, res.StatusCode)
		}
	}
	ls, err := e.admin.ListSessions(ctx, &pb.ListSessionsRequest{User: "demo"})
	if err != nil || len(ls.GetSessions()) != 2 {
		t.Fatalf("demo's sessions: %v %v", ls, err)
	}
	if _, err := e.admin.ListSessions(ctx, &pb.ListSessionsRequest{NodeId: "nosuch"}); grpcCode(err) != codes.NotFound {
		t.Fatalf("sessions of an unknown node: %v, want NOT_FOUND", err)
	}
	if ls, err := e.admin.ListSessions(ctx, &pb.ListSessionsRequest{NodeId: "n1", User: "nobody"}); err != nil || len(ls.GetSessions()) != 0 {
		t.Fatalf("a known node's sessions of a subscriber without any: %v %v", ls, err)
	}
	var demo []string
	var played string
	for _, s := range ls.GetSessions() {
		demo = append(demo, s.GetSessionId())
		if s.GetTitleId() == "t1" {
			played = s.GetSessionId()
		}
	}
	slices.Sort(demo)
	if err := n.event(played, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}

	for name, req := range map[string]*pb.EndSessionsRequest{
		"neither":      {},
		"both":         {SessionIds: demo, User: "demo"},
		"control char": {User: "demo", Reason: "bad\r\nreason"},
		"long reason":  {User: "demo", Reason: strings.Repeat("x", 300)},
		"empty id":     {SessionIds: []string{""}}, // was NOT_FOUND
		"huge id":      {SessionIds: []string{strings.Repeat("a", 1<<20)}},
	} {
		if _, err := e.admin.EndSessions(ctx, req); grpcCode(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want INVALID_ARGUMENT", name, err)
		}
	}
	for name, req := range map[string]*pb.EndSessionsRequest{
		"unknown session": {SessionIds: []string{"0123456789abcdef0123456789abcdef"}},
		"nobody's":        {User: "nobody"},
	} {
		if _, err := e.admin.EndSessions(ctx, req); grpcCode(err) != codes.NotFound {
			t.Errorf("%s: %v, want NOT_FOUND", name, err)
		}
	}

	before := time.Now()
	res, err := e.admin.EndSessions(ctx, &pb.EndSessionsRequest{User: "demo", Reason: "account suspended"})
	if err != nil || !slices.Equal(res.GetSessionIds(), demo) {
		t.Fatalf("EndSessions: %v %v, want %v", res, err, demo)
	}
	cmd := n.endCommand(t)
	got := slices.Sorted(slices.Values(cmd.GetSessionIds()))
	if !slices.Equal(got, demo) || cmd.GetReason() != "ended by the operator: account suspended" ||
		time.UnixMilli(cmd.GetRefuseUntilUnixMs()).Before(before.Add(e.m.TokenTTL-time.Second)) {
		t.Fatalf("node told %+v, want %v ended with the reason, tokens refused for a token TTL", cmd, demo)
	}
	if ss := e.sessions(); len(ss) != 1 || ss[0].GetUser() != "kid" {
		t.Fatalf("sessions left %v, want kid's only", ss)
	}
	if r := e.reserved("n1"); r != titleBps {
		t.Fatalf("reserved %d bit/s on n1, want kid's %d", r, titleBps)
	}

	// The other never reached the node: its record is written at once,
	// without bytes, not after the wait for an ENDED.
	waitFor(t, 5*time.Second, "the unstarted session's record", func() bool { return len(readRecords(t, records)) == 1 })
	if r := readRecords(t, records)[0]; r.BytesSent != 0 || !r.StartedAt.IsZero() || r.Title != "t2" || r.Reason != "ended by the operator: account suspended" {
		t.Fatalf("record %+v", r)
	}
	// The node reports the played one ENDED with what it sent: its record
	// is written with the bytes (the manager acknowledges the event).
	if _, err := n.nc.ReportSession(ctx, &pb.SessionEvent{NodeId: "n1", SessionId: played, Kind: pb.SessionEvent_KIND_ENDED,
		Reason: cmd.GetReason(), BytesSent: 4242, AtUnixMs: time.Now().UnixMilli()}); err != nil {
		t.Fatalf("the ENDED of an operator-ended session: %v", err)
	}
	waitFor(t, 5*time.Second, "the played session's record", func() bool { return len(readRecords(t, records)) == 2 })
	r := readRecords(t, records)[1]
	if r.Session != played || r.BytesSent != 4242 || r.Reason != "ended by the operator: account suspended" || r.StartedAt.IsZero() || r.BytesSentUnknown {
		t.Fatalf("record %+v", r)
	}
}

// TestOperatorEndsSessionOfNodeNotBack: a session the operator ends while
// its node has not registered since the manager restarted (its session
// restored from the store) is ended at the node when the node comes back
// still playing it, as after a forget: its reservation is gone.
func TestOperatorEndsSessionOfNodeNotBack(t *testing.T) {
	e2, a := restartedWithNodeAway(t, nil)
	if _, err := e2.admin.EndSessions(context.Background(), &pb.EndSessionsRequest{SessionIds: []string{a}}); err != nil {
		t.Fatalf("EndSessions of a restored session: %v", err)
	}
	n2 := e2.registerOnly("n1", a) // it played on, cut off from the manager
	n2.heartbeat()
	t.Cleanup(n2.stop)
	if cmd := n2.endCommand(t); !slices.Contains(cmd.GetSessionIds(), a) {
		t.Fatalf("node told to end %v, want %s", cmd.GetSessionIds(), a)
	}
}

// TestRestoredSessionEndedAwayIsToldToItsNode: a session restored at a
// manager restart whose node does not register within RestoreGrace is
// ended; when the node registers later, still playing it (it was cut off,
// not dead), it is told to end it (its reservation is gone).
func TestRestoredSessionEndedAwayIsToldToItsNode(t *testing.T) {
	e2, a := restartedWithNodeAway(t, func(m *Manager) { m.RestoreGrace = 200 * time.Millisecond })
	waitFor(t, 10*time.Second, "the restored session ended: its node did not come back", func() bool { return e2.session(a) == nil })
	n2 := e2.registerOnly("n1", a) // it played on, cut off from the manager
	n2.heartbeat()
	t.Cleanup(n2.stop)
	if cmd := n2.endCommand(t); !slices.Contains(cmd.GetSessionIds(), a) {
		t.Fatalf("node told to end %v, want %s", cmd.GetSessionIds(), a)
	}
}

// restartedWithNodeAway plays session a on node n1, cuts n1 off, and
// restarts the manager (configured by configure) on the same state: a is
// restored there, its node not registered.
func restartedWithNodeAway(t *testing.T, configure func(*Manager)) (*env, string) {
	t.Helper()
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	return newManager(t, dir, configure), a
}

// TestOperatorEndRefusesQueuedRequests: a request of the subscriber
// waiting in the admission queue (the node full) when the operator ends
// the subscriber's sessions is refused (403), not admitted on the
// reservation the end frees; another subscriber's waiting request is
// admitted on it.
func TestOperatorEndRefusesQueuedRequests(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 20 * time.Second })
	e.startNode("n1", nodeOpts{egress: titleBps})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("first: %d", res.StatusCode)
	}
	type answer struct {
		who  string
		code base.StatusCode
	}
	answers := make(chan answer, 2)
	for _, who := range []string{"demo", "kid"} {
		go func() {
			res, err := e.dialRTSP().do(base.Describe, "/vod/t2", basicHeader(who, who))
			if err != nil {
				answers <- answer{who, 0}
				return
			}
			answers <- answer{who, res.StatusCode}
		}()
		waitFor(t, 5*time.Second, who+"'s request queued", func() bool { return e.queued() >= map[string]int{"demo": 1, "kid": 2}[who] })
	}
	if _, err := e.admin.EndSessions(context.Background(), &pb.EndSessionsRequest{User: "demo"}); err != nil {
		t.Fatal(err)
	}
	got := map[string]base.StatusCode{}
	for range 2 {
		select {
		case a := <-answers:
			got[a.who] = a.code
		case <-time.After(10 * time.Second):
			t.Fatalf("answers so far %v: a queued request not answered", got)
		}
	}
	if got["demo"] != base.StatusForbidden || got["kid"] != base.StatusFound {
		t.Fatalf("answers %v: want demo's queued request 403, kid's admitted", got)
	}
	if ss := e.sessions(); len(ss) != 1 || ss[0].GetUser() != "kid" {
		t.Fatalf("sessions %v, want kid's only", ss)
	}
}
