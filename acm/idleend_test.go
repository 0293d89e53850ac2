package acm

import (
	"path/filepath"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestIdleSessionEndsAtItsLastRequestWhenItsNodeDies: an HTTP session its
// node's last report listed idle (its viewer asking nothing for 20 s),
// whose node then died and did not come back, ends where its viewer last
// asked, as its idle timeout or a clean stop of its node would end it,
// not when the node was last heard of: played_s stops there. (A download
// finished long before was billed until the node's death, up to its
// pause timeout later.)
func TestIdleSessionEndsAtItsLastRequestWhenItsNodeDies(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.RestoreGrace = 300 * time.Millisecond; m.SessionRecordsFile = records })
	n := e.startNode("n1", nodeOpts{})
	sid := e.admitOne("t1")
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	// Started a minute ago (by the table), idle for the last 20 s.
	e.m.mu.Lock()
	e.m.sessions[sid].StartedAt = time.Now().Add(-time.Minute)
	e.m.mu.Unlock()
	n.setIdle(sid, 20)
	n.heartbeat()
	waitFor(t, 5*time.Second, "the session listed idle", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		_, ok := e.m.nodes["n1"].idle[sid]
		return ok
	})
	lastHeard := time.Now()
	n.stop()
	waitFor(t, 10*time.Second, "the session's record", func() bool { return len(readRecords(t, records)) == 1 })
	r := readRecords(t, records)[0]
	if r.Reason != "node did not come back" || r.EndedAt.After(lastHeard.Add(-19*time.Second)) || r.PlayedS > 41 || r.PlayedS < 39 {
		t.Fatalf("record ended %v (%s), played %.1f s: want it ended where its viewer last asked, 20 s before its node was last heard of (%v): about 40 s played",
			r.EndedAt, r.Reason, r.PlayedS, lastHeard)
	}
}

// So does an HTTP session its node listed quiet for quietLeft or more
// (no request in progress, not idle yet: its viewer zapped away or
// paused); one quiet for less (an HLS player between segments) ends at
// its node's death. Such a session was counted to the node's death, up
// to session_timeout too long.
func TestQuietSessionEndsAtItsLastRequestWhenItsNodeDies(t *testing.T) {
	records := filepath.Join(t.TempDir(), "sessions.jsonl")
	e := newManager(t, "", func(m *Manager) { m.RestoreGrace = 300 * time.Millisecond; m.SessionRecordsFile = records })
	n := e.startNode("n1", nodeOpts{})
	left, between := e.admitOne("t1"), e.admitOne("t2")
	for _, sid := range []string{left, between} {
		if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	e.m.mu.Lock()
	for _, sid := range []string{left, between} {
		e.m.sessions[sid].StartedAt = time.Now().Add(-time.Minute)
	}
	e.m.mu.Unlock()
	n.setQuiet(left, 30, between, 3)
	n.heartbeat()
	waitFor(t, 5*time.Second, "the sessions listed quiet", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return len(e.m.nodes["n1"].quiet) == 2
	})
	lastHeard := time.Now()
	n.stop()
	waitFor(t, 10*time.Second, "the sessions' records", func() bool { return len(readRecords(t, records)) == 2 })
	for _, r := range readRecords(t, records) {
		switch r.Session {
		case left:
			if r.EndedAt.After(lastHeard.Add(-29*time.Second)) || r.PlayedS > 31 || r.PlayedS < 29 {
				t.Errorf("quiet 30 s: ended %v, played %.1f s; want it ended 30 s before its node was last heard of (%v): about 30 s played", r.EndedAt, r.PlayedS, lastHeard)
			}
		case between:
			if r.EndedAt.Before(lastHeard.Add(-time.Second)) || r.PlayedS < 59 {
				t.Errorf("quiet 3 s: ended %v, played %.1f s; want it ended at its node's death (%v)", r.EndedAt, r.PlayedS, lastHeard)
			}
		}
	}
}
