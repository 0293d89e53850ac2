package acm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestSessionRecordOfASessionEndedWhileNoManagerWas: a session ends while
// its node reaches no manager (the manager crashed and restarts, or a
// failover's gap); the node, the same process, registers with the manager
// that comes up, whose first report no longer lists the session, and
// sends the ENDED it queued only after that report. The record waits for
// it and takes its end, bytes and reason: the viewer's whole play, not
// the manager's guess of when it was last heard of. (The ENDED was
// refused NotFound and the record said a tenth of the play.)
func TestSessionRecordOfASessionEndedWhileNoManagerWas(t *testing.T) {
	dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
	withRecords := func(m *Manager) { m.SessionRecordsFile = path }
	e := newManager(t, dir, withRecords)
	process := time.Now().Add(-time.Minute) // the node's process, started before the session
	n := e.startNode("n1", nodeOpts{started: process})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(2 * time.Second) // the viewer's TEARDOWN, while no manager ran
	e2 := newManager(t, dir, withRecords)
	n2 := e2.startNode("n1", nodeOpts{started: process}) // its first report lists no session
	_, err := n2.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: "n1", SessionId: a, Kind: pb.SessionEvent_KIND_ENDED,
		Reason: "teardown", BytesSent: 4_062_792, AtUnixMs: end.UnixMilli()})
	if err != nil {
		t.Fatalf("the node's queued ENDED after its first report: %v, want it taken", err)
	}
	waitFor(t, 10*time.Second, "the session's record", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	r := readRecords(t, path)[0]
	if r.Session != a || r.Reason != "teardown" || r.BytesSent != 4_062_792 || r.BytesSentUnknown || !r.EndedAt.Equal(end.Truncate(time.Millisecond)) {
		t.Fatalf("record %+v: want the node's ENDED (teardown at %v, 4062792 bytes)", r, end.UTC())
	}
}

// TestHeldRecordWaitsFromNow: a record held for its node's ENDED waits
// its time from when it was held, not from the end it guesses, which
// after an outage of minutes lies further back than the wait: it went
// out at once, and the ENDED that came seconds later was refused.
func TestHeldRecordWaitsFromNow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = path })
	now := time.Now()
	s := &session{Session: store.Session{ID: "held", User: "demo", Title: "t1", Node: "n1", AdmittedAt: now.Add(-2 * time.Hour), StartedAt: now.Add(-2 * time.Hour)},
		endedAt: now.Add(-time.Hour), awaitEnded: true}
	e.m.mu.Lock()
	e.m.sessionRecordLocked(s, "not on its node after the node registered", now)
	e.m.flushHeldRecordsLocked(now.Add(time.Second), false)
	_, held := e.m.heldRecords["held"]
	e.m.mu.Unlock()
	if !held {
		t.Fatal("the record, its end an hour back, went out at once instead of waiting for the node's ENDED")
	}
}
