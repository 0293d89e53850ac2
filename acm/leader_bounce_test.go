package acm

import (
	"context"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestNodeBackRewritesItsSessions: a node moves from the standby to the
// active manager of the pair (which claims its session's entry) and back
// to the standby within its restore_grace, the session still in the
// standby's table as its own. The standby writes the entry as its own
// again: left naming the active manager, it was deleted under the live
// session when the active one ended its orphan after restore_grace.
func TestNodeBackRewritesItsSessions(t *testing.T) {
	open, _ := sharedRedis(t)
	stA, stB := open(), open()
	a := newManager(t, "", onShared(stA, &countPlanner{}, 300*time.Millisecond))
	b := newManager(t, "", onShared(stB, &countPlanner{}, time.Minute))
	if !a.m.Leader() || b.m.Leader() {
		t.Fatalf("leaders: A %v, B %v; want A only", a.m.Leader(), b.m.Leader())
	}
	a.keepServing() // else the lock would go to b, which n1 reports to
	n := b.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	sid := b.admitOne("t1")
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.stop()
	onA := a.registerWith("n1", sid)
	stored := func() string {
		s, err := stA.Session(context.Background(), sid)
		if err != nil {
			return "none: " + err.Error()
		}
		return s.Manager
	}
	waitFor(t, 5*time.Second, "the entry claimed by A", func() bool { return stored() == a.m.holderID() })
	onA.stop()
	b.registerWith("n1", sid)
	waitFor(t, 5*time.Second, "the entry B's again", func() bool { return stored() == b.m.holderID() })
	waitFor(t, 10*time.Second, "A to end its orphan", func() bool { return a.session(sid) == nil })
	if got := stored(); got != b.m.holderID() || b.session(sid) == nil {
		t.Fatalf("B's live session's entry after A ended its orphan: %s, want B's", got)
	}
}
