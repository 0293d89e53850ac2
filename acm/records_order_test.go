package acm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node's ENDED whose time is a moment before the STARTED it sent (a UDP
// viewer gone before its first receiver report: its end is its last sign
// of life, the PLAY, which came before the start the node reported) gives
// a record that ends when it started, played_s 0, never ended_at before
// started_at (billing counts the difference).
func TestSessionRecordNeverEndsBeforeItStarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, t.TempDir(), func(m *Manager) { m.SessionRecordsFile = path })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	start := time.Now().Truncate(time.Millisecond)
	for _, ev := range []*pb.SessionEvent{
		{NodeId: n.id, SessionId: a, Kind: pb.SessionEvent_KIND_STARTED, AtUnixMs: start.UnixMilli()},
		{NodeId: n.id, SessionId: a, Kind: pb.SessionEvent_KIND_ENDED, Reason: "timeout", AtUnixMs: start.Add(-time.Millisecond).UnixMilli()},
	} {
		if _, err := e.nc.ReportSession(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.m.Close(); err != nil { // writes the records queued
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, path)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1: %+v", len(recs), recs)
	}
	r := recs[0]
	if !r.StartedAt.Equal(start) || r.EndedAt.Before(r.StartedAt.Time) || !r.EndedAt.Equal(start) || r.PlayedS != 0 {
		t.Fatalf("record started %v ended %v played_s %v: want it ended when it started (%v), played_s 0", r.StartedAt, r.EndedAt, r.PlayedS, start.UTC())
	}
}
