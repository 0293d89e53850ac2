package vodnode

import (
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestAbortEndedReportedBeforeShutdown: a session the node ends on the
// manager's order while its stream still has a write waiting for the
// connection (an elementary-stream play's packet, its client not
// reading) has its ENDED reported to the manager when the node shuts
// down meanwhile: the shutdown fails that write (it closes the
// connections) and its ENDED, reported once nothing more of the stream
// is to be written, must reach the manager before the node's link to it
// closes. It was reported on a goroutine nobody waited for, racing the
// link's last flush, and lost.
func TestAbortEndedReportedBeforeShutdown(t *testing.T) {
	t.Parallel()
	m, maddr := startFastManager(t)
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	sid, title := "abort-ended-at-shutdown", "sample-003"
	stalledESPlay(t, n, sid, title)
	const reason = "ended by the manager (test)"
	if !n.endAdmission(sid, reason) {
		t.Fatal("no live session to end")
	}
	n.Close()
	ev := m.event(sid, pb.SessionEvent_KIND_ENDED)
	if ev == nil {
		t.Fatal("no ENDED reported for the aborted session once the node closed")
	}
	if ev.GetReason() != reason {
		t.Errorf("ENDED reason %q, want %q", ev.GetReason(), reason)
	}
}
