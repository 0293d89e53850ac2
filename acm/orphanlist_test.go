package acm

import (
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// listedStateOf is the state ListSessions shows for session id, "" when
// it is not listed.
func (e *env) listedStateOf(id string) string {
	for _, s := range e.sessions() {
		if s.GetSessionId() == id {
			return s.GetState()
		}
	}
	return ""
}

// A session whose node died is listed as orphaned while it waits
// restore_grace for the node, not as playing: the node's reservations
// are released at once (sessions 0), and a
// listing that still said playing disagreed with it for the whole grace.
// ListNodes counts it in the node's orphaned_sessions (vodctl nodes
// showed the node with SESSIONS 0 while vodctl sessions listed it
// orphaned). It is playing again when the node comes back with it.
func TestOrphanedSessionsListed(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.RestoreGrace = time.Minute })
	n := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.setSessions(a)
	waitFor(t, 5*time.Second, "the session playing", func() bool { return e.listedStateOf(a) == "playing" })
	n.stop()
	waitFor(t, 5*time.Second, "the node dead", func() bool { return !e.nodeInfo("n1").GetAlive() })
	if got := e.listedStateOf(a); got != listedOrphaned {
		t.Fatalf("session of a dead node listed %q, want %q", got, listedOrphaned)
	}
	if r := e.reserved("n1"); r != 0 {
		t.Fatalf("dead node reserves %d bit/s", r)
	}
	if ni := e.nodeInfo("n1"); ni.GetSessions() != 0 || ni.GetOrphanedSessions() != 1 {
		t.Fatalf("dead node listed with %d sessions, %d orphaned; want 0, 1", ni.GetSessions(), ni.GetOrphanedSessions())
	}
	n.heartbeat() // back, still playing it
	t.Cleanup(n.stop)
	waitFor(t, 5*time.Second, "the session playing again", func() bool { return e.listedStateOf(a) == "playing" })
	if ni := e.nodeInfo("n1"); ni.GetSessions() != 1 || ni.GetOrphanedSessions() != 0 {
		t.Fatalf("node back listed with %d sessions, %d orphaned; want 1, 0", ni.GetSessions(), ni.GetOrphanedSessions())
	}
}
