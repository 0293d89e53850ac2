package vodnode

import (
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestExpectedPartialReportedUsed: the partial fill of a title a viewer
// is on its way for (the manager's ExpectCommand), which the node's own
// eviction keeps for that viewer's fill to resume, is reported to the
// manager as used disk, not free, until the viewer arrives or its
// deadline passes: reported free, as other partials are, it let the
// manager place on the node a fill that only that partial could make
// room for, which the node then refused (453/503).
func TestExpectedPartialReportedUsed(t *testing.T) {
	o := newFakeOrigin(t)
	o.fail.Store(true) // the first chunk, then DATA_LOSS
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	size := int64(len(o.titles["sample-002"]))
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 50 * time.Millisecond
		n.FillRetryFor = 300 * time.Millisecond
		n.Capacity = Capacity{EgressBps: 1e9, DiskBytes: 4 * size}
	})
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-002"}}}
	waitFor(t, 10*time.Second, "the partial", func() bool { return len(n.store.Partials()) == 1 })
	stored := n.store.Partials()[0].Stored
	if stored <= 0 {
		t.Fatalf("partial of %d bytes", stored)
	}
	report := func() *pb.LoadReport { return (&managerLink{n: n}).loadReport() }
	if r := report(); r.GetDiskFreeBytes() != 4*size || r.GetDiskUsedBytes() != 0 {
		t.Fatalf("report with a partial: free %d, used %d; want %d, 0 (a partial counts free)", r.GetDiskFreeBytes(), r.GetDiskUsedBytes(), 4*size)
	}

	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Expect{Expect: &pb.ExpectCommand{
		SessionId: "s1", TitleId: "sample-002", UntilUnixMs: time.Now().Add(time.Minute).UnixMilli()}}})
	waitFor(t, 5*time.Second, "the viewer expected", func() bool { return n.ExpectedViewers("sample-002") == 1 })
	if r := report(); r.GetDiskFreeBytes() != 4*size-stored || r.GetDiskUsedBytes() != stored {
		t.Errorf("report with the partial kept for a viewer on its way: free %d, used %d; want %d, %d", r.GetDiskFreeBytes(), r.GetDiskUsedBytes(), 4*size-stored, stored)
	}

	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_EndSessions{EndSessions: &pb.EndSessionsCommand{SessionIds: []string{"s1"}}}})
	waitFor(t, 5*time.Second, "the viewer no longer expected", func() bool { return n.ExpectedViewers("sample-002") == 0 })
	if r := report(); r.GetDiskFreeBytes() != 4*size || r.GetDiskUsedBytes() != 0 {
		t.Errorf("report once the viewer is no longer expected: free %d, used %d; want %d, 0", r.GetDiskFreeBytes(), r.GetDiskUsedBytes(), 4*size)
	}
}
