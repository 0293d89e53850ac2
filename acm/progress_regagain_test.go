package acm

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestSessionRecordOfANodeRegisteredAgainAndDead: a node playing a
// session restarts at once (it registers again before the manager missed
// its heartbeats) and dies before its first report since. The
// registration says nothing of the session, but the node's reports
// before it did: its record ends when the node was last heard of playing
// it, before the registration, not restore_grace after the node died.
func TestSessionRecordOfANodeRegisteredAgainAndDead(t *testing.T) {
	dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
	e, n, a := playingWithBytes(t, dir, func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = time.Second })
	// Its new process, at its address; no report: it died again. The old
	// process's reports go on until the registration replaces it: by the
	// time Register returns.
	if _, err := e.nc.Register(context.Background(), regReq("n1", "127.0.0.1:1", "127.0.0.1:2", 10*titleBps)); err != nil {
		t.Fatal(err)
	}
	reg := time.Now()
	n.stop() // the old stream's end: not the node's death (replaced)
	r := recordOf(t, path)
	if r.Session != a || r.EndedAt.After(reg) || r.EndedAt.Before(r.StartedAt.Time) {
		t.Fatalf("record %+v: want it ended when n1 was last heard of playing it, by its registration at %v", r, reg.UTC())
	}
	if r.BytesSent != 187_654_321 || !r.BytesSentAsOfReport {
		t.Fatalf("record %+v: want bytes_sent 187654321 as of the last report", r)
	}
}

// TestProgressOfANodeRegisteredWithoutAReport: after a power cut the next
// manager starts, the session's node registers with it and, before its
// first report, that manager saves the sessions' progress and is killed
// too; the node never comes back. The registration said nothing of the
// session: the progress keeps when the first manager last heard of it,
// and the record ends there, not at the registration.
func TestProgressOfANodeRegisteredWithoutAReport(t *testing.T) {
	dir, path, a, cut := powerCut(t)
	e2 := newManager(t, dir, recordsTo(path, time.Hour))
	e2.registerOnly("n1") // and no report
	e2.m.saveProgress(time.Now().Add(stateWriteWait))
	if p := storedProgress(t, e2).Sessions[a]; p.HeardAt.After(cut) {
		t.Errorf("stored progress of %s heard at %v: want when the first manager last heard of it, before %v", a, p.HeardAt, cut.UTC())
	}
	killManager(t, e2)
	newManager(t, dir, recordsTo(path, time.Second))
	r := recordOf(t, path)
	if r.Session != a || r.EndedAt.After(cut) || r.EndedAt.Before(r.StartedAt.Time) {
		t.Fatalf("record %+v: want it ended when the first manager last heard of it (before %v), not at the registration", r, cut.UTC())
	}
}

// TestSessionRecordOfASessionStartedBeforeItsNodesFirstReport: a node
// registers, a viewer starts playing on it, and the node dies before its
// first report. Nothing was heard of the session but its STARTED: its
// record ends at its start, as a session the stored progress missed
// does, not restore_grace after the node died.
func TestSessionRecordOfASessionStartedBeforeItsNodesFirstReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = 200 * time.Millisecond })
	n := e.registerOnly("n1") // and no report: it dies
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	r := recordOf(t, path)
	if r.Session != a || r.StartedAt.IsZero() || !r.EndedAt.Equal(r.StartedAt.Time) || !r.BytesSentUnknown {
		t.Fatalf("record %+v: want it ended at its start, its bytes unknown", r)
	}
}
