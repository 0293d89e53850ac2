package acm

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestReregisteredNodeLogsWhatItKept: a node that died comes back playing
// one of its two sessions. Its registration logged "sessions=3" (the
// sessions the manager held on it, an admitted one included), and the
// session it no longer plays then ended as not on its node without a
// count: read as three sessions back on the node. The registration now
// says sessions_restored=3, and its first report how many ended as not
// on the node (1) and how many stay (2).
func TestReregisteredNodeLogsWhatItKept(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	n := e.startNode("n1", nodeOpts{})
	a, b, c := e.admitOne("t1"), e.admitOne("t2"), e.admitOne("t3")
	for _, id := range []string{a, b} {
		if err := n.event(id, pb.SessionEvent_KIND_STARTED); err != nil {
			t.Fatal(err)
		}
	}
	n.stop()
	waitFor(t, 5*time.Second, "n1 to die", func() bool { return !e.nodeInfo("n1").Alive })
	back := e.registerOnly("n1", a)
	back.heartbeat()
	t.Cleanup(back.stop)
	waitFor(t, 5*time.Second, "b to end", func() bool { return e.session(b) == nil })
	if e.session(a) == nil || e.session(c) == nil {
		t.Fatalf("sessions %v", e.sessions())
	}
	lines := strings.Split(log.String(), "\n")
	var reg, ended string
	for _, l := range lines {
		switch {
		case strings.Contains(l, `msg="node registered"`):
			reg = l // the last: the node's return
		case strings.Contains(l, "sessions restored on it that it does not play ended"):
			ended = l
		}
	}
	if !strings.Contains(reg, "sessions_restored=3") || strings.Contains(reg, " sessions=") {
		t.Errorf("the node's return logged %q; want sessions_restored=3", reg)
	}
	if !strings.Contains(ended, "node=n1") || !strings.Contains(ended, "sessions_ended=1") || !strings.Contains(ended, "sessions_kept=2") {
		t.Errorf("the node's first report logged %q; want sessions_ended=1 sessions_kept=2", ended)
	}
}
