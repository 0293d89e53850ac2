package acm

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestEndedBeforeTheNodeRegistered: after a failover the front door's
// address reaches the standby before the node has registered with it; a
// session that ends then is reported to a manager that has not loaded the
// node's sessions. The event is refused as UNAVAILABLE (the node retries),
// not NOT_FOUND (the node drops it), when the store holds the session;
// once the node registered, the same
// event ends the session with the node's bytes and end time in its
// record. A session unknown from a registered node is still NOT_FOUND.
func TestEndedBeforeTheNodeRegistered(t *testing.T) {
	b, records, sid, ended, endedAt := endedBeforeRegistration(t, 3*time.Second)
	// One the store does not hold (the node left, its sessions ended and
	// released) is NOT_FOUND: nothing to wait for.
	gone := &pb.SessionEvent{NodeId: "n9", SessionId: "ended-long-ago", Kind: pb.SessionEvent_KIND_ENDED}
	if _, err := b.nc.ReportSession(context.Background(), gone); grpcCode(err) != codes.NotFound {
		t.Fatalf("ENDED of a session the store does not hold, from a node not registered here: %v, want NOT_FOUND", err)
	}
	b.registerWith("n1", sid)
	if _, err := b.nc.ReportSession(context.Background(), ended); err != nil {
		t.Fatalf("ENDED once the node registered: %v", err)
	}
	if s := b.session(sid); s != nil || b.reserved("n1") != 0 {
		t.Fatalf("after ENDED: session %+v, reserved %d", s, b.reserved("n1"))
	}
	unknown := &pb.SessionEvent{NodeId: "n1", SessionId: "never-admitted", Kind: pb.SessionEvent_KIND_ENDED}
	if _, err := b.nc.ReportSession(context.Background(), unknown); grpcCode(err) != codes.NotFound {
		t.Fatalf("ENDED of an unknown session from a registered node: %v, want NOT_FOUND", err)
	}
	b.m.Close() // writes what is queued
	rs := readRecords(t, records)
	if len(rs) != 1 || rs[0].Session != sid || rs[0].BytesSent != 5_111_012 || !rs[0].EndedAt.Equal(endedAt) || rs[0].Reason != "teardown" {
		t.Fatalf("records %+v, want one of %s with the node's bytes and end time %v", rs, sid, endedAt)
	}
}

// endedBeforeRegistration sets up a failover on a shared Redis: manager A
// admits a session of node n1, which plays it and loses A; manager B
// (writing session records to records) is told the session ENDED ago
// before now (5111012 bytes, teardown) before n1 has registered with it,
// and answers UNAVAILABLE (checked). It returns B, the records file, the
// session, the event (for a retry) and its end time (ms precision).
func endedBeforeRegistration(t *testing.T, ago time.Duration) (b *env, records, sid string, ended *pb.SessionEvent, at time.Time) {
	t.Helper()
	open, _ := sharedRedis(t)
	records = filepath.Join(t.TempDir(), "sessions.jsonl")
	a := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	b = newManager(t, "", func(m *Manager) {
		onShared(open(), &countPlanner{}, time.Minute)(m)
		m.SessionRecordsFile = records
	})
	// The node's clock a second behind the end's "ago": its STARTED
	// before the end it reports (a record never ends before it starts).
	n := a.startNode("n1", nodeOpts{skew: -ago - time.Second})
	sid = a.admitOne("t1")
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	at = time.Now().Add(-ago).Truncate(time.Millisecond)
	ended = &pb.SessionEvent{NodeId: "n1", SessionId: sid, TitleId: "t1", Kind: pb.SessionEvent_KIND_ENDED,
		Reason: "teardown", BytesSent: 5_111_012, AtUnixMs: at.UnixMilli()}
	if _, err := b.nc.ReportSession(context.Background(), ended); grpcCode(err) != codes.Unavailable {
		t.Fatalf("ENDED from a node not registered here yet: %v, want UNAVAILABLE", err)
	}
	return b, records, sid, ended, at
}
