package acm

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestSessionRecordOfARestartedNodeWithItsClockOff: as in
// TestSessionRecordOfANodeRestartedWhileTheManagerWas, with the node's
// clock a minute ahead of the manager's, or behind. The process start is
// on the node's clock, like the session's start: it is weighed against the
// node's own report, not against the manager's clock, so a node whose
// clock runs ahead still has its sessions end when its new process
// started (not at the registration, on the manager's clock, which puts
// the end before the start: played_s 0).
func TestSessionRecordOfARestartedNodeWithItsClockOff(t *testing.T) {
	for _, skew := range []time.Duration{time.Minute, -time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
			withRecords := func(m *Manager) { m.SessionRecordsFile = path }
			e := newManager(t, dir, withRecords)
			n := e.startNode("n1", nodeOpts{skew: skew})
			a := e.admitOne("t1")
			if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
				t.Fatal(err)
			}
			e.m.mu.Lock()
			started := e.m.sessions[a].StartedAt
			e.m.mu.Unlock()
			n.stop()
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			restart := started.Add(20 * time.Millisecond) // on the node's clock
			e2 := newManager(t, dir, withRecords)
			e2.startNode("n1", nodeOpts{skew: skew, started: restart})
			waitFor(t, 10*time.Second, "the session's record", func() bool {
				_, err := os.Stat(path)
				return err == nil && len(readRecords(t, path)) == 1
			})
			r := readRecords(t, path)[0]
			if r.Session != a || !r.EndedAt.Equal(restart) || r.PlayedS != 0.02 || !r.BytesSentUnknown {
				t.Fatalf("record %+v: want it ended when the node's process started again (%v, the node's clock), played_s 0.02, bytes unknown", r, restart.UTC())
			}
		})
	}
}

// TestSessionRecordStartedByAReportOnTheNodesClock: a session whose node
// listed it in a load report before its STARTED came (the STARTED lost,
// or beaten by the report) starts at that report's time on the node's
// clock, like one started by its STARTED: its record, ended by the node's
// process start after a restart while the manager was down (also on the
// node's clock), does not count the node's clock being a minute ahead of
// the manager's as a minute played.
func TestSessionRecordStartedByAReportOnTheNodesClock(t *testing.T) {
	const skew = time.Minute
	dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
	withRecords := func(m *Manager) { m.SessionRecordsFile = path }
	e := newManager(t, dir, withRecords)
	n := e.startNode("n1", nodeOpts{skew: skew})
	a := e.admitOne("t1")
	n.setSessions(a) // listed, no STARTED
	waitFor(t, 10*time.Second, "the report marking it playing", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		s := e.m.sessions[a]
		return s != nil && !s.StartedAt.IsZero()
	})
	restart := time.UnixMilli(time.Now().Add(skew).Add(20 * time.Millisecond).UnixMilli()) // on the node's clock
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := newManager(t, dir, withRecords)
	e2.startNode("n1", nodeOpts{skew: skew, started: restart})
	waitFor(t, 10*time.Second, "the session's record", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	r := readRecords(t, path)[0]
	if r.Session != a || !r.EndedAt.Equal(restart) || r.PlayedS > 10 || r.StartedAt.Before(r.AdmittedAt.Add(skew-time.Second)) {
		t.Fatalf("record %+v: want it started when the report was taken by the node's clock (a minute after admitted_at), ended at %v, a few seconds played at most", r, restart.UTC())
	}
}
