package acm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// killManager stops e's manager as a killed process would: without the
// writes its Close makes (the sessions' progress, the popularity
// snapshot), so that what the next manager reads is what the periodic
// writes left.
func killManager(t *testing.T, e *env) {
	t.Helper()
	e.m.serving = false // read by teardown only (Close's final writes)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
}

// playingWithBytes starts node n1 of a manager on dir that saves its
// sessions' progress every 20 ms, admits one session there that starts
// and has 187654321 bytes reported, and waits until the stored progress
// has them. It returns the manager, the node and the session.
func playingWithBytes(t *testing.T, dir string, configure func(*Manager)) (*env, *fakeNode, string) {
	t.Helper()
	return playingWith(t, dir, configure, 187_654_321)
}

// playingWith is playingWithBytes with bytes reported.
func playingWith(t *testing.T, dir string, configure func(*Manager), bytes uint64) (*env, *fakeNode, string) {
	t.Helper()
	e := newManager(t, dir, func(m *Manager) { configure(m); m.ProgressSave = 20 * time.Millisecond })
	n, a, _ := startPlaying(t, e, bytes)
	return e, n, a
}

// powerCut plays a session on node n1 of a manager on a new data
// directory (playingWithBytes) whose records go to a new file, then kills
// the node and the manager together. It returns the directory, the
// records file, the session and when the cut came.
func powerCut(t *testing.T) (dir, path, sid string, cut time.Time) {
	t.Helper()
	dir, path = t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
	e, n, sid := playingWithBytes(t, dir, recordsTo(path, time.Minute))
	n.stop()
	killManager(t, e)
	return dir, path, sid, time.Now()
}

// recordsTo configures a manager to write its session records to path,
// with restore_grace grace.
func recordsTo(path string, grace time.Duration) func(*Manager) {
	return func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = grace }
}

// startPlaying starts node n1 of e, admits a session of t1 there that
// starts and has bytes reported, and waits until e's manager stored
// its progress (waitProgressOf). It returns the node, the session and
// when the manager last heard of the node then.
func startPlaying(t *testing.T, e *env, bytes uint64) (*fakeNode, string, time.Time) {
	t.Helper()
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.setSent(a, bytes)
	return n, a, waitProgressOf(t, e, a, int64(bytes))
}

// waitProgressOf waits until e's manager has bytes reported for session
// sid and has stored its sessions' progress since. It returns when the
// manager last heard of the session's node then, to the millisecond.
func waitProgressOf(t *testing.T, e *env, sid string, bytes int64) (heard time.Time) {
	t.Helper()
	var mark time.Time
	waitFor(t, 10*time.Second, "the session's bytes reported", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		s := e.m.sessions[sid]
		if s == nil || !s.bytesAsOfReport || s.bytesSent != bytes {
			return false
		}
		heard, mark = e.m.sched.Node(s.Node).LastHeartbeat, e.m.now()
		return true
	})
	waitFor(t, 10*time.Second, "the sessions' progress stored since", func() bool {
		p := storedProgress(t, e)
		_, ok := p.Sessions[sid]
		return ok && p.At.After(mark)
	})
	return heard.Truncate(time.Millisecond) // as records' times are
}

// storedProgress returns the sessions' progress in e's store (none when
// it holds none).
func storedProgress(t *testing.T, e *env) savedProgress {
	t.Helper()
	var p savedProgress
	b, err := e.m.st.State(context.Background(), stateProgress)
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return p
}

// recordOf waits for the one session record in path and returns it.
func recordOf(t *testing.T, path string) sessionRecord {
	t.Helper()
	waitFor(t, 10*time.Second, "the session's record", func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readRecords(t, path)) == 1
	})
	return readRecords(t, path)[0]
}

// TestSessionRecordAfterTheManagerWasKilled: the manager and the node of
// a playing session are killed (a power cut) and the next manager
// starts. Whether the node never comes back (ended after restore_grace),
// comes back within it without the session and without saying when its
// process started, or comes back restarted (its process start an outage
// later), the session's record ends when the first manager last heard of
// it, with the bytes last reported (as of a report), not restore_grace
// after the second manager started, at the node's registration or at its
// new process's start, with its bytes unknown: played_s leaves out the
// downtime.
func TestSessionRecordAfterTheManagerWasKilled(t *testing.T) {
	for name, c := range map[string]struct {
		grace  time.Duration
		node   *nodeOpts // the node that comes back; nil: none
		reason string
	}{
		"node never back": {time.Second, nil, "node did not come back"},
		"node back":       {time.Minute, &nodeOpts{}, "not on its node after the node registered"},
		"node restarted":  {time.Minute, &nodeOpts{started: time.Now()}, "not on its node after the node registered"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, path, a, cut := powerCut(t)
			e2 := newManager(t, dir, recordsTo(path, c.grace))
			if c.node != nil {
				o := *c.node
				if !o.started.IsZero() {
					o.started = time.Now() // after the cut: the outage
				}
				e2.startNode("n1", o)
			}
			r := recordOf(t, path)
			if r.Session != a || r.Reason != c.reason || r.EndedAt.After(cut) || r.EndedAt.Before(r.StartedAt.Time) {
				t.Fatalf("record %+v: want it ended (%s) when the first manager last heard of it (before %v)", r, c.reason, cut.UTC())
			}
			if r.BytesSent != 187_654_321 || !r.BytesSentAsOfReport || r.BytesSentUnknown {
				t.Fatalf("record %+v: want bytes_sent 187654321 as of the last report", r)
			}
		})
	}
}

// TestSessionProgressMalformed: a stored progress entry that does not
// decode is logged and ignored: the manager starts, and its sessions end
// as they did before any progress was stored.
func TestSessionProgressMalformed(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, func(m *Manager) { m.ProgressSave = time.Hour })
	if err := e.m.st.PutState(context.Background(), stateProgress, []byte("x")); err != nil {
		t.Fatal(err)
	}
	killManager(t, e)
	e2 := newManager(t, dir, nil)
	if got := e2.m.loadProgress(context.Background()); got != nil {
		t.Fatalf("progress %v from a malformed entry: want none", got)
	}
}

// TestSessionRecordOfZeroBytesAfterTheManagerWasKilled: a session whose
// node's last report counted 0 bytes for it keeps that figure through
// the stored progress: its record has bytes_sent 0 as of a report, not
// unknown, as the first manager's would have.
func TestSessionRecordOfZeroBytesAfterTheManagerWasKilled(t *testing.T) {
	dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
	withRecords := func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = time.Second }
	e, n, a := playingWith(t, dir, withRecords, 0)
	n.stop()
	killManager(t, e)
	newManager(t, dir, withRecords)
	if r := recordOf(t, path); r.Session != a || r.BytesSent != 0 || !r.BytesSentAsOfReport || r.BytesSentUnknown {
		t.Fatalf("record %+v: want bytes_sent 0 as of the last report", r)
	}
}

// TestSessionRecordOfASessionStartedAfterItsNodesLastReport: a session
// whose STARTED came after its node's last report (the manager heard of
// the node before the start) when the progress was stored ends at its
// start, as it would on the manager that heard it, not restore_grace
// after the next manager started.
func TestSessionRecordOfASessionStartedAfterItsNodesLastReport(t *testing.T) {
	dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
	withRecords := func(m *Manager) { m.SessionRecordsFile = path; m.RestoreGrace = time.Second }
	e := newManager(t, dir, func(m *Manager) { withRecords(m); m.ProgressSave = 20 * time.Millisecond })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	n.mute(true)
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	mark := time.Now()
	waitFor(t, 10*time.Second, "the session's progress stored", func() bool {
		p := storedProgress(t, e)
		_, ok := p.Sessions[a]
		return ok && p.At.After(mark)
	})
	n.stop()
	killManager(t, e)
	cut := time.Now()
	newManager(t, dir, withRecords)
	if r := recordOf(t, path); r.Session != a || r.EndedAt.After(cut) || !r.EndedAt.Equal(r.StartedAt.Time) {
		t.Fatalf("record %+v: want it ended at its start (before %v)", r, cut.UTC())
	}
}
