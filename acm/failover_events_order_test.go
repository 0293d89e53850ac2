package acm

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestEndedBeforeTheNodeRegisteredReportFirst: as in
// TestEndedBeforeTheNodeRegistered, a session ends while its node has not
// registered with the manager now active, whose UNAVAILABLE makes the
// node retry the ENDED later; but the node registers and sends its first
// load report (without the session, which it no longer plays) before the
// retry comes, as it does: the report follows the registration at once,
// the retry waits its backoff. The retried ENDED still gives the record
// the node's bytes and end time.
func TestEndedBeforeTheNodeRegisteredReportFirst(t *testing.T) {
	b, records, sid, ended, endedAt := endedBeforeRegistration(t, 0)
	b.registerWith("n1") // its first report does not list the session
	if _, err := b.nc.ReportSession(context.Background(), ended); err != nil {
		t.Errorf("ENDED retried after the node's first report: %v", err)
	}
	b.m.Close() // writes what is queued
	rs := readRecords(t, records)
	if len(rs) != 1 || rs[0].Session != sid || rs[0].BytesSent != 5_111_012 || !rs[0].EndedAt.Equal(endedAt) || rs[0].Reason != "teardown" {
		t.Fatalf("records %+v, want one of %s with the node's bytes 5111012, end time %v and reason teardown", rs, sid, endedAt)
	}
}

// TestEndedRetriedInTimeForgotten: an ENDED refused as UNAVAILABLE and
// retried once its node registered, before a report left the session out,
// ends the session as usual and is no longer remembered as refused.
func TestEndedRetriedInTimeForgotten(t *testing.T) {
	open, _ := sharedRedis(t)
	a := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	b := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	n := a.startNode("n1", nodeOpts{})
	sid := a.admitOne("t1")
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	ended := &pb.SessionEvent{NodeId: "n1", SessionId: sid, TitleId: "t1", Kind: pb.SessionEvent_KIND_ENDED, AtUnixMs: time.Now().UnixMilli()}
	if _, err := b.nc.ReportSession(context.Background(), ended); grpcCode(err) != codes.Unavailable {
		t.Fatalf("ENDED from a node not registered here yet: %v, want UNAVAILABLE", err)
	}
	b.registerWith("n1", sid)
	if _, err := b.nc.ReportSession(context.Background(), ended); err != nil {
		t.Fatalf("ENDED once the node registered: %v", err)
	}
	b.m.mu.Lock()
	_, kept := b.m.endedRefused[sid]
	b.m.mu.Unlock()
	if kept {
		t.Error("a refused ENDED applied on its retry is still remembered")
	}
}
