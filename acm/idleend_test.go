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
