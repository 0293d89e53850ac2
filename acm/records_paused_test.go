package acm

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestSessionRecordPausedFromEnded: a session record's paused_s is the
// paused_ms of its node's ENDED, whether the ENDED ends the session or
// completes the record held for it (the operator ended the session), and
// never more than played_s (a node's clock that disagrees).
func TestSessionRecordPausedFromEnded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		operator bool  // the operator ends it first: the record waits for the ENDED
		pausedMs int64 // the ENDED's
		want     float64
	}{
		{"ended", false, 4321, 4.321},
		{"held", true, 2500, 2.5},
		{"capped", false, 60_000, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			end := time.Now()
			start := end.Add(-10 * time.Second)
			if _, err := n.nc.ReportSession(ctx, &pb.SessionEvent{NodeId: "n1", SessionId: sid, Kind: pb.SessionEvent_KIND_STARTED, AtUnixMs: start.UnixMilli()}); err != nil {
				t.Fatal(err)
			}
			if tc.operator {
				if _, err := e.admin.EndSessions(ctx, &pb.EndSessionsRequest{SessionIds: []string{sid}}); err != nil {
					t.Fatal(err)
				}
				n.endCommand(t)
			}
			if _, err := n.nc.ReportSession(ctx, &pb.SessionEvent{NodeId: "n1", SessionId: sid, Kind: pb.SessionEvent_KIND_ENDED,
				Reason: "teardown", BytesSent: 1000, AtUnixMs: end.UnixMilli(), PausedMs: tc.pausedMs}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the session's record", func() bool { return len(readRecords(t, records)) == 1 })
			if r := readRecords(t, records)[0]; r.PausedS != tc.want || r.PlayedS != 10 {
				t.Fatalf("record %+v: want played_s 10, paused_s %v", r, tc.want)
			}
		})
	}
}
