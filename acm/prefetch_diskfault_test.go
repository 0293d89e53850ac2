package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// setDiskFault makes the node's reports say (or no longer say) that it
// cannot write its title cache, and waits for the manager to hear it.
func (e *env) setDiskFault(n *fakeNode, on bool) {
	e.t.Helper()
	n.mu.Lock()
	n.diskFault = on
	n.mu.Unlock()
	waitFor(e.t, 5*time.Second, "the node's disk fault reported", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes[n.id]
		return ns != nil && ns.diskFault == on
	})
}

// A prefetch naming no node never chooses a node reporting a disk fault,
// however empty its disk: that node refuses a fill (it cannot write its
// title cache), so the manager chose it and refused the prefetch
// FAILED_PRECONDITION while another node could take the title. Also
// when the title is queued on the node with the fault (passed over, then
// chosen again), and without the Replicator.
func TestPrefetchWithNoNodeChoosesNoNodeWithADiskFault(t *testing.T) {
	t.Run("replicator", func(t *testing.T) {
		e := newManagerWith(t, "", unhinted(), quietStorage)
		n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000}) // the emptiest
		e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{stored("r")}})
		e.setDiskFault(n1.fakeNode, true)
		ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
		if err != nil || ack.GetNodeId() != "n2" {
			t.Fatalf("prefetch of t1 naming no node, n1 reporting a disk fault: %v %v, want it ordered on n2", ack, err)
		}
	})
	t.Run("queued there", func(t *testing.T) {
		e := newManagerWith(t, "", unhinted(), quietStorage)
		n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p")}})
		e.queueOn("n1", "t1") // n1 fills p: at its fill limit
		e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{stored("q"), stored("r")}})
		e.setDiskFault(n1.fakeNode, true)
		ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
		if err != nil || ack.GetNodeId() != "n2" || !strings.Contains(ack.GetMessage(), `node "n1" cannot write its title cache`) {
			t.Fatalf("prefetch of t1 naming no node, queued on n1 reporting a disk fault: %v %v, want it ordered on n2, the answer naming n1's fault", ack, err)
		}
		if f := e.fill("n1", "t1"); f == nil || f.State != "queued" {
			t.Fatalf("fill of t1 on n1 %+v, want it still queued", f)
		}
	})
	t.Run("no replicator", func(t *testing.T) {
		e := newManager(t, "", func(m *Manager) { m.StoragePlanner = smm.PlannerNone })
		n1 := e.startNode("n1", nodeOpts{diskFree: 1 << 40}) // the most free disk
		e.startNode("n2", nodeOpts{diskFree: 1 << 30})
		e.setDiskFault(n1, true)
		ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
		if err != nil || ack.GetNodeId() != "n2" {
			t.Fatalf("prefetch of t1 naming no node, n1 reporting a disk fault: %v %v, want it ordered on n2", ack, err)
		}
	})
}

// With every node in service reporting a disk fault, a prefetch naming
// no node is refused FAILED_PRECONDITION saying so (not as a want of
// room); once a node's fault clears, it takes the title.
func TestPrefetchWithNoNodeWhileEveryNodeHasADiskFault(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
	n2 := e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	e.setDiskFault(n1.fakeNode, true)
	e.setDiskFault(n2.fakeNode, true)
	ctx := context.Background()
	_, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "every node in service with an origin reports a disk fault") {
		t.Fatalf("prefetch with every node reporting a disk fault: %v, want FailedPrecondition saying so", err)
	}
	e.setDiskFault(n2.fakeNode, false)
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"}); err != nil || ack.GetNodeId() != "n2" {
		t.Fatalf("prefetch with n2's fault cleared: %v %v, want it ordered on n2", ack, err)
	}
	n2.waitCommand(t, "prefetch t1", 1)
}
