package acm

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestForgetEndsRecordsWhenTheNodeWasLastHeardOf: a node dies (its stream
// breaks, no goodbye) while a session plays on it and is forgotten once it
// is dead, here and, after a restart of the manager, from the store
// alone. The session's record ends when its node was last heard of, with
// the bytes of its last report, not at the forget: played_s leaves out
// the time the node lay dead before the operator forgot it.
func TestForgetEndsRecordsWhenTheNodeWasLastHeardOf(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := map[bool]string{false: "dead here", true: "known from the store"}[restart]
		t.Run(name, func(t *testing.T) {
			dir, path := t.TempDir(), filepath.Join(t.TempDir(), "sessions.jsonl")
			configure := func(m *Manager) {
				m.SessionRecordsFile = path
				m.RestoreGrace = time.Hour // the orphan waits for the forget
			}
			e, n, a := playingWithBytes(t, dir, configure)
			n.stop()
			var heard time.Time // n1's last report
			if restart {
				killManager(t, e)
				e = newManager(t, dir, configure)
			} else {
				waitFor(t, 10*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
				e.m.mu.Lock()
				heard = e.m.sched.Node("n1").LastHeartbeat.Truncate(time.Millisecond)
				e.m.mu.Unlock()
			}
			forgot := time.Now()
			if _, err := e.admin.ForgetNode(context.Background(), &pb.ForgetNodeRequest{NodeId: "n1"}); err != nil {
				t.Fatal(err)
			}
			r := recordOf(t, path)
			if r.Session != a || r.Reason != "node forgotten by the operator" || !r.EndedAt.Before(forgot) {
				t.Fatalf("record %+v: want it ended when n1 was last heard of, before the forget at %v", r, forgot.UTC())
			}
			if !restart && !r.EndedAt.Equal(heard) {
				t.Fatalf("record ended at %v: want %v, n1's last report", r.EndedAt, heard.UTC())
			}
			if r.BytesSent != 187_654_321 || !r.BytesSentAsOfReport {
				t.Fatalf("record %+v: want bytes_sent 187654321 as of the last report", r)
			}
		})
	}
}
