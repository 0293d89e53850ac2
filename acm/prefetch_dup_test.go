package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// The same prefetch ordered twice while it is queued (the node at its
// fill limit) is refused ALREADY_EXISTS the second time, as a duplicate of
// one ordered to the node is, saying it is queued: one entry stays, with
// its first time, one stored order, and the plan orders it once. (Both
// answered OK "prefetch queued", the second restarting its wait.)
func TestPrefetchQueuedTwiceIsAlreadyExists(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Replicator.MaxFillsPerNode = 1
	})
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	n.waitCommand(t, "prefetch hot", 1)
	ctx := context.Background()
	req := &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}
	if ack, err := e.admin.Prefetch(ctx, req); err != nil || !strings.Contains(ack.GetMessage(), "queued") {
		t.Fatalf("prefetch: %v %v, want it queued", ack, err)
	}
	first := e.fill("n1", "t1")
	if first == nil || first.State != "queued" {
		t.Fatalf("fill listed %+v, want queued", first)
	}
	// The planner's prefetch ordered to the node: the duplicate's answer.
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "hot", NodeId: "n1"}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("prefetch of a title ordered to the node: %v, want AlreadyExists", err)
	}
	time.Sleep(5 * time.Millisecond) // a second entry would have a later time
	_, err := e.admin.Prefetch(ctx, req)
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "already queued") ||
		!strings.Contains(err.Error(), "1 prefetch queued there") || !strings.Contains(err.Error(), "max_fills_per_node 1") {
		t.Fatalf("the same prefetch again while queued: %v, want AlreadyExists saying it is queued, how many are and why", err)
	}
	var listed []*pb.Fill
	for _, f := range e.fills() {
		if f.TitleId == "t1" {
			listed = append(listed, f)
		}
	}
	if len(listed) != 1 || listed[0].State != "queued" || listed[0].SinceUnixMs != first.SinceUnixMs {
		t.Fatalf("fills of t1 %+v, want the one queued at %d", listed, first.SinceUnixMs)
	}
	if o := storedOrders(t, e); len(o) != 1 {
		t.Fatalf("stored orders %+v, want one", o)
	}
	n.complete("hot")
	n.waitCommand(t, "prefetch t1", 1)
	n.complete("t1")
	waitFor(t, 5*time.Second, "the queued prefetch done", func() bool { return e.fill("n1", "t1") == nil })
	if k := n.count("prefetch t1"); k != 1 {
		t.Fatalf("t1 prefetched %d times, want once", k)
	}
}

// A prefetch naming no node of a title the operator's prefetch waits
// queued for on a node (at its fill limit) is refused ALREADY_EXISTS, as
// one naming that node is, saying where it is queued: the manager placed
// it on a second node (the one it chose), fetching the title twice.
// Naming another node still orders it there.
func TestPrefetchWithNoNodeOfATitleQueuedIsAlreadyExists(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Replicator.MaxFillsPerNode = 1
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	n1.waitCommand(t, "prefetch hot", 1)
	ctx := context.Background()
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil || !strings.Contains(ack.GetMessage(), "queued") {
		t.Fatalf("prefetch: %v %v, want it queued", ack, err)
	}
	// A second node, with room to spare: the one the manager would choose.
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "already queued") || !strings.Contains(err.Error(), `node "n1"`) {
		t.Fatalf("prefetch of t1 naming no node while queued on n1: %v %v, want AlreadyExists saying it is queued on n1", ack, err)
	}
	if f := e.fill("n2", "t1"); f != nil {
		t.Fatalf("fill of t1 on n2 %+v, want none", f)
	}
	if f := e.fill("n1", "t1"); f == nil || f.State != "queued" {
		t.Fatalf("fill of t1 on n1 %+v, want queued", f)
	}
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n2"}); err != nil || ack.GetNodeId() != "n2" {
		t.Fatalf("prefetch of t1 naming n2: %v %v, want it ordered or queued there", ack, err)
	}
	if f := e.fill("n2", "t1"); f == nil {
		t.Fatal("no fill of t1 on n2 after a prefetch naming n2")
	}
}
