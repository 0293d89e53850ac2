package acm

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// A session event whose at_unix_ms no session record can hold (past the
// year 9999, or negative) is refused with INVALID_ARGUMENT and changes
// nothing: a STARTED at math.MaxInt64 was applied (the session listed
// playing since the year 292277026596), then its store write failed
// (UNAVAILABLE to the node, which retries it; the manager not ready while
// it did) and the session's record was lost at its end. A time at the
// bound is taken.
func TestSessionEventTimeOutOfRange(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE: %d, want 302", res.StatusCode)
	}
	ss := e.sessions()
	if len(ss) != 1 {
		t.Fatalf("%d sessions, want 1", len(ss))
	}
	sid := ss[0].GetSessionId()
	for _, ms := range []int64{math.MaxInt64, maxUnixMs + 1, -1, math.MinInt64} {
		for _, kind := range []pb.SessionEvent_Kind{pb.SessionEvent_KIND_STARTED, pb.SessionEvent_KIND_ENDED} {
			_, err := e.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: n.id, SessionId: sid, Kind: kind, AtUnixMs: ms})
			if grpcCode(err) != codes.InvalidArgument {
				t.Errorf("%v at_unix_ms %d: %v, want INVALID_ARGUMENT", kind, ms, err)
			}
		}
	}
	// a negative bytes_sent likewise (it was taken into the record)
	if _, err := e.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: n.id, SessionId: sid, Kind: pb.SessionEvent_KIND_ENDED, BytesSent: -5}); grpcCode(err) != codes.InvalidArgument {
		t.Errorf("ENDED with bytes_sent -5: %v, want INVALID_ARGUMENT", err)
	}
	// and a negative paused_ms (the record's paused_s)
	if _, err := e.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: n.id, SessionId: sid, Kind: pb.SessionEvent_KIND_ENDED, PausedMs: -5}); grpcCode(err) != codes.InvalidArgument {
		t.Errorf("ENDED with paused_ms -5: %v, want INVALID_ARGUMENT", err)
	}
	if ss := e.sessions(); len(ss) != 1 || ss[0].GetState() != "admitted" || ss[0].GetStartedUnixMs() != 0 {
		t.Fatalf("sessions after the refused events: %v, want the session admitted, not started", ss)
	}
	if _, err := e.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: n.id, SessionId: sid, Kind: pb.SessionEvent_KIND_STARTED, AtUnixMs: maxUnixMs}); err != nil {
		t.Fatalf("STARTED at the year 9999's last millisecond: %v", err)
	}
}

// A load report's time past the year 9999 is not taken for the node's
// (reportTime falls back on the manager's).
func TestReportTimeOutOfRange(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	for _, ms := range []int64{math.MaxInt64, maxUnixMs + 1, 0, -5} {
		if got := reportTime(&pb.LoadReport{AtUnixMs: ms}, now); !got.Equal(now) {
			t.Errorf("at_unix_ms %d: %v, want the manager's now", ms, got)
		}
	}
	if got := reportTime(&pb.LoadReport{AtUnixMs: maxUnixMs}, now); got.UnixMilli() != maxUnixMs {
		t.Errorf("at_unix_ms %d: %v", int64(maxUnixMs), got)
	}
}
