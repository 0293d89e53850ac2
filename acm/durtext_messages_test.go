package acm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/lsm"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// The durations the manager quotes to an operator read as the
// configuration writes them ("1m", "2m"), not in Go's form ("1m0s"):
// restore_grace in the no-node refusal's log line, the time a node
// alive now is taken as dead in vodctl node forget's refusal, the window of a
// collapsed refusals' summary, twice leader_ttl in vodctl's answer of a
// manager leaving the planner lock, and a negative setting's error. A
// duration computed for the message, as the time a standby nodes report
// to waits for the planner lock (five thirds of leader_ttl), is rounded
// ("about 17s", not "about 16.666666666s").
func TestOperatorMessagesDurationsWritten(t *testing.T) {
	t.Run("no node reporting", func(t *testing.T) {
		var log logtest.Buffer
		e := newManager(t, "", func(m *Manager) {
			m.RestoreGrace = time.Minute
			m.Scheduler.HeartbeatInterval, m.Scheduler.MissedHeartbeats = 20*time.Second, 3
			m.Logger = slog.New(slog.NewTextHandler(&log, nil))
		})
		e.startNode("n1", nodeOpts{})
		_, err := e.admin.ForgetNode(context.Background(), &pb.ForgetNodeRequest{NodeId: "n1"})
		if err == nil || !strings.Contains(err.Error(), "(1m after its last heartbeat") {
			t.Errorf("vodctl node forget of a live node, want 1m after its last heartbeat: %v", err)
		}
		e.m.mu.Lock()
		e.m.noNodeRefusedLocked(&lsm.Request{Title: "t1"}, "demo", time.Now(), time.Now()) // unlocks mu
		if s := log.String(); !strings.Contains(s, "dead for over restore_grace (1m)") {
			t.Errorf("the refusal's log line, want restore_grace (1m):\n%s", s)
		}
	})
	t.Run("refusals summed up", func(t *testing.T) {
		var log logtest.Buffer
		l := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		var r refusalNotes
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		r.log(l, t0, refusedNoBandwidth, slog.LevelInfo, "admission refused: full", "user", "demo")
		r.log(l, t0.Add(time.Second), refusedNoBandwidth, slog.LevelInfo, "admission refused: full", "user", "demo")
		r.flush(l, t0.Add(time.Minute))
		if s := log.String(); !strings.Contains(s, "refused 1 request for no bandwidth in the last 1m (each at debug)") {
			t.Errorf("the summary, want in the last 1m:\n%s", s)
		}
	})
	t.Run("leaving the planner lock", func(t *testing.T) {
		m := &Manager{LeaderTTL: time.Minute, lead: &leader{}}
		m.lead.yielding.Store(true)
		if err := m.notLeader("retry"); err == nil || !strings.Contains(err.Error(), "none has in 2m)") {
			t.Errorf("vodctl's answer, want in 2m: %v", err)
		}
	})
	t.Run("standby nodes report to", func(t *testing.T) {
		m := &Manager{LeaderTTL: 10 * time.Second, lead: &leader{serves: func() bool { return true }}}
		m.lead.other.Store(true) // another manager holds the lock
		if err := m.notLeader("retry"); err == nil || !strings.Contains(err.Error(), "within about 17s: try again then") {
			t.Errorf("vodctl's answer, want within about 17s: %v", err)
		}
	})
	t.Run("negative setting", func(t *testing.T) {
		m := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
			DataDir: t.TempDir(), Secret: testSecret, BOSS: &recordingBOSS{}, LeaderTTL: -time.Hour, Logger: testLogger(t)}
		err := m.Start()
		if err == nil {
			m.Close()
			t.Fatal("started with LeaderTTL -1h")
		}
		if !strings.Contains(err.Error(), "LeaderTTL -1h is negative") {
			t.Errorf("error %q, want LeaderTTL -1h", err)
		}
	})
}
