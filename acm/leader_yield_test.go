package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A manager no node reports to that loses the planner lock it held (its
// renewal refused: the lease ran out, as in a stall of Redis, and the
// manager the nodes report to took the lock) lets its tries pass for two
// leases, leaving the lock to that manager: it answers the changes only
// the active manager makes FAILED_PRECONDITION, saying it leaves the lock
// to the manager the nodes report to, not UNAVAILABLE saying it takes the
// lock back in a few seconds, which it answered for those two leases.
func TestManagerWithoutNodesLeavesTheLostLockNotRetaking(t *testing.T) {
	open, _ := sharedRedis(t)
	a := newManager(t, "", func(m *Manager) {
		onShared(open(), &countPlanner{}, time.Minute)(m)
		m.LeaderTTL = 6 * time.Second // renewed every 2 s; tries let pass for 12 s once lost
	})
	b := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	if !a.m.Leader() || b.m.Leader() {
		t.Fatalf("leaders: a %v, b %v; want a alone", a.m.Leader(), b.m.Leader())
	}
	b.startNode("n1", nodeOpts{}) // the nodes report to b

	// a's lease ends in the store (as it would in a stall): b takes the
	// lock, a's renewal is refused.
	if ok, err := open().Unlock(context.Background(), plannerLock, a.m.lead.holder); err != nil || !ok {
		t.Fatalf("a's lock removed: %v %v", ok, err)
	}
	waitFor(t, 10*time.Second, "b holding the lock and a's renewal refused", func() bool {
		return b.m.Leader() && !a.m.lead.held.Load()
	})
	for call, err := range clusterChanges(a) {
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no node reports to this manager, so it leaves the planner lock") {
			t.Errorf("%s on the manager without nodes that lost the lock to b: %v, want FAILED_PRECONDITION saying it leaves the lock to the nodes' manager", call, err)
		}
	}
	if a.m.Leader() || !b.m.Leader() {
		t.Fatalf("leaders after the calls: a %v, b %v; want b alone", a.m.Leader(), b.m.Leader())
	}
}
