package acm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node's ENDED for a session the manager does not hold (a manager that
// restarted after Redis lost its data: the node plays on sessions no
// store knows) is refused NOT_FOUND, as before, but no longer leaves the
// manager without a trace: it logs the end at info, with the node, the
// session, the title, the reason and the bytes sent, once per session
// (the node may report it again). The report carries no subscriber nor
// admission time: no session record is written. The ENDED of a session
// the manager ended itself (here by the operator) is not logged at info.
func TestLostSessionEndedIsLogged(t *testing.T) {
	var log lockedLog
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	n := e.startNode("n1", nodeOpts{})
	const sid = "0123456789abcdef0123456789abcdef"
	ev := &pb.SessionEvent{NodeId: "n1", SessionId: sid, TitleId: "t1", Kind: pb.SessionEvent_KIND_ENDED,
		Reason: "teardown", BytesSent: 123456, AtUnixMs: time.Now().UnixMilli()}
	for i := range 2 {
		if _, err := n.nc.ReportSession(context.Background(), ev); status.Code(err) != codes.NotFound {
			t.Fatalf("ENDED %d of a session the manager does not hold: %v, want NOT_FOUND", i+1, err)
		}
	}
	// A STARTED of it is no end: not logged.
	started := &pb.SessionEvent{NodeId: "n1", SessionId: "fedcba9876543210fedcba9876543210", TitleId: "t2", Kind: pb.SessionEvent_KIND_STARTED}
	if _, err := n.nc.ReportSession(context.Background(), started); status.Code(err) != codes.NotFound {
		t.Fatalf("STARTED of a session the manager does not hold: %v, want NOT_FOUND", err)
	}
	// The ENDED of a session this manager ended itself (the operator's
	// vodctl sessions end, no session record file to complete) is
	// routine: not logged at info.
	ended := e.admitOne("t1")
	if err := n.event(ended, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.EndSessions(context.Background(), &pb.EndSessionsRequest{SessionIds: []string{ended}}); err != nil {
		t.Fatal(err)
	}
	n.endCommand(t)
	if err := n.event(ended, pb.SessionEvent_KIND_ENDED); status.Code(err) != codes.NotFound {
		t.Fatalf("ENDED of a session the operator ended: %v, want NOT_FOUND", err)
	}
	var lines []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "does not hold") {
			lines = append(lines, l)
		}
		if strings.Contains(l, "session="+ended) && strings.Contains(l, "level=INFO") && strings.Contains(l, "at its node") {
			t.Errorf("the ENDED of a session the operator ended logged at info: %s", l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d log lines of the lost session's end, want 1:\n%s", len(lines), log.String())
	}
	for _, want := range []string{"level=INFO", "node=n1", "session=" + sid, "title=t1", "reason=teardown", "bytes_sent=123456"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %q lacks %q", lines[0], want)
		}
	}
}
