package acm

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestOperatorEndedRecordWaitsForTheNodesWrites: the session record of a
// session the operator ends still waits for its node's ENDED 21 s after
// the order: a node reports an RTSP session it aborts once its last
// writes have ended (the RTCP BYE, a packet of an elementary-stream play
// under way), which a client not reading holds up to the node's 10 s
// write timeout each (two of them). The record was written without the node's bytes
// after 10 s, and the ENDED that came then refused NOT_FOUND.
func TestOperatorEndedRecordWaitsForTheNodesWrites(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = records })
	n := e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("demo t1: %d", res.StatusCode)
	}
	ls, err := e.admin.ListSessions(ctx, &pb.ListSessionsRequest{User: "demo"})
	if err != nil || len(ls.GetSessions()) != 1 {
		t.Fatalf("demo's sessions: %v %v", ls, err)
	}
	sid := ls.GetSessions()[0].GetSessionId()
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.EndSessions(ctx, &pb.EndSessionsRequest{SessionIds: []string{sid}}); err != nil {
		t.Fatal(err)
	}
	cmd := n.endCommand(t)
	// The node's writes for the session take two of its write timeouts.
	e.m.mu.Lock()
	e.m.flushHeldRecordsLocked(time.Now().Add(2*10*time.Second+time.Second), false)
	e.m.mu.Unlock()
	if rs := readRecords(t, records); len(rs) != 0 {
		t.Fatalf("record written before the node's ENDED: %+v", rs[0])
	}
	if _, err := n.nc.ReportSession(ctx, &pb.SessionEvent{NodeId: "n1", SessionId: sid, Kind: pb.SessionEvent_KIND_ENDED,
		Reason: cmd.GetReason(), BytesSent: 4242, AtUnixMs: time.Now().UnixMilli()}); err != nil {
		t.Fatalf("the ENDED of an operator-ended session, late: %v", err)
	}
	waitFor(t, 5*time.Second, "the session's record", func() bool { return len(readRecords(t, records)) == 1 })
	if r := readRecords(t, records)[0]; r.Session != sid || r.BytesSent != 4242 {
		t.Fatalf("record %+v, want session %s with the node's 4242 bytes", r, sid)
	}
}

// TestOperatorEndedRecordTakesLaterReportedBytes: the held record of a
// session the operator ended takes the figures of its node's reports
// that still list the session (the node slow to end it), is written with
// the last one, marked as of a report, when no ENDED comes, and an ENDED
// that comes replaces it; a report after the ENDED changes nothing.
func TestOperatorEndedRecordTakesLaterReportedBytes(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = records })
	n := e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	a, b := e.admitOne("t1"), e.admitOne("t1")
	for _, sid := range []string{a, b} {
		if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
		n.setSent(sid, 100)
	}
	if _, err := e.admin.EndSessions(ctx, &pb.EndSessionsRequest{SessionIds: []string{a, b}}); err != nil {
		t.Fatal(err)
	}
	n.endCommand(t) // not carried out: the node lists both still
	n.setSent(a, 9000)
	n.setSent(b, 7000)
	held := func(sid string) (int64, bool) {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		h, ok := e.m.heldRecords[sid]
		return h.rec.BytesSent, ok && h.rec.BytesSentAsOfReport && !h.rec.BytesSentUnknown
	}
	waitFor(t, 10*time.Second, "the held records' bytes from the later reports", func() bool {
		x, okA := held(a)
		y, okB := held(b)
		return okA && okB && x == 9000 && y == 7000
	})
	if _, err := n.nc.ReportSession(ctx, &pb.SessionEvent{NodeId: "n1", SessionId: b, Kind: pb.SessionEvent_KIND_ENDED,
		Reason: "ended", BytesSent: 7100, AtUnixMs: time.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	n.setSent(b, 99_999) // a report listing b after its ENDED
	from := e.reports("n1")
	waitFor(t, 10*time.Second, "two more reports", func() bool { return e.reports("n1") >= from+2 })
	e.m.mu.Lock()
	e.m.flushHeldRecordsLocked(time.Now().Add(heldRecordWait+time.Second), false)
	e.m.mu.Unlock()
	waitFor(t, 5*time.Second, "both records", func() bool { return len(readRecords(t, records)) == 2 })
	for _, r := range readRecords(t, records) {
		switch {
		case r.Session == a && (r.BytesSent != 9000 || !r.BytesSentAsOfReport || r.BytesSentUnknown):
			t.Errorf("record %+v: want a's last reported 9000 bytes, as of a report", r)
		case r.Session == b && (r.BytesSent != 7100 || r.BytesSentAsOfReport || r.BytesSentUnknown):
			t.Errorf("record %+v: want b's ENDED count 7100", r)
		}
	}
}

// TestOperatorEndedUnseenRecordAtOnce: the record of a session the
// operator ends before its viewer reached its node (no STARTED, no report
// listing it) is written when the end is ordered, not after the wait for
// an ENDED; the node, told to refuse the token, answers a viewer that
// comes later with a refusal, whose ENDED adds no second record. A viewer
// that reached the node a moment before the order (its STARTED comes
// after the end) has the node told again to end the session.
func TestOperatorEndedUnseenRecordAtOnce(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = records })
	n := e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	a, b := e.admitOne("t1"), e.admitOne("t2")
	if _, err := e.admin.EndSessions(ctx, &pb.EndSessionsRequest{SessionIds: []string{a, b}}); err != nil {
		t.Fatal(err)
	}
	if cmd := n.endCommand(t); cmd.GetRefuseUntilUnixMs() == 0 || len(cmd.GetSessionIds()) != 2 {
		t.Fatalf("node told %+v, want both ended and their tokens refused", cmd)
	}
	waitFor(t, 5*time.Second, "both records, without waiting for an ENDED", func() bool { return len(readRecords(t, records)) == 2 })
	for _, r := range readRecords(t, records) {
		if r.BytesSent != 0 || !r.StartedAt.IsZero() || r.Reason != defaultEndReason {
			t.Fatalf("record %+v, want never started, no bytes", r)
		}
	}
	e.m.mu.Lock()
	held := len(e.m.heldRecords)
	e.m.mu.Unlock()
	if held != 0 {
		t.Fatalf("%d records still held", held)
	}
	// a's viewer comes after the order: refused at the node (401).
	if _, err := n.nc.ReportSession(ctx, &pb.SessionEvent{NodeId: "n1", SessionId: a, Kind: pb.SessionEvent_KIND_ENDED,
		Reason: "refused: 401 token spent", AtUnixMs: time.Now().UnixMilli()}); grpcCode(err) != codes.NotFound {
		t.Fatalf("the refusal's ENDED: %v, want NOT_FOUND", err)
	}
	// b's viewer came a moment before the order: the node started it.
	if err := n.event(b, pb.SessionEvent_KIND_STARTED); grpcCode(err) != codes.NotFound {
		t.Fatalf("the STARTED of a session ended and recorded: %v, want NOT_FOUND", err)
	}
	if cmd := n.endCommand(t); !slices.Equal(cmd.GetSessionIds(), []string{b}) || cmd.GetReason() != defaultEndReason || cmd.GetRefuseUntilUnixMs() == 0 {
		t.Fatalf("node told %+v, want %s ended again", cmd, b)
	}
	// Its ENDED, with the bytes the node sent before the order came: taken
	// (not refused: the node would retry it), logged, no second record.
	if _, err := n.nc.ReportSession(ctx, &pb.SessionEvent{NodeId: "n1", SessionId: b, Kind: pb.SessionEvent_KIND_ENDED,
		Reason: "ended by the manager", BytesSent: 5000, AtUnixMs: time.Now().UnixMilli()}); err != nil {
		t.Fatalf("the ENDED with bytes of a session ended and recorded: %v, want it taken", err)
	}
	if rs := readRecords(t, records); len(rs) != 2 {
		t.Fatalf("%d records, want the 2 written at the end", len(rs))
	}
}
