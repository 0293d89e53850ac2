package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// The answer to a prefetch naming no node that passes over the nodes
// where the title is queued names the command that cancels each order
// left there (vodctl evict t1 n1, vodctl evict t1 n3), not a placeholder
// NODE the operator had to fill in from the list that follows, and each
// node's reason in the same order (n3 before n10: the nodes' order).
func TestPrefetchPassedOverAnswerNamesEachCancel(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p")}})
	e.startSimNode("n10", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("q")}})
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	e.startSimNode("n3", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("s")}})
	e.queueOn("n1", "t1") // each fills a title: at its fill limit
	e.queueOn("n3", "t1")
	e.queueOn("n10", "t1")
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.setNode(&pb.SetNodeRequest{NodeId: "n3", Weight: ptr(int32(0))})
	e.setNode(&pb.SetNodeRequest{NodeId: "n10", Draining: ptr(true)})
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
	msg := ack.GetMessage()
	if err != nil || ack.GetNodeId() != "n2" {
		t.Fatalf("prefetch of t1 naming no node, queued on n1, n3 and n10 out of service: %v %v, want it on n2", ack, err)
	}
	if !strings.Contains(msg, "to cancel: vodctl evict t1 n1, vodctl evict t1 n3, vodctl evict t1 n10)") || strings.Contains(msg, "NODE") {
		t.Errorf("answer %q: want the cancel command of each node passed over, in the nodes' order", msg)
	}
	i1, i3, i10 := strings.Index(msg, `node "n1" is not in service`), strings.Index(msg, `node "n3" is not in service`), strings.Index(msg, `node "n10" is not in service`)
	if i1 < 0 || i3 < 0 || i10 < 0 || !(i1 < i3 && i3 < i10) {
		t.Errorf("answer %q: want the reasons of n1, n3 and n10 in that order", msg)
	}
}

// The refusals for a disk fault name the nodes and say where the fault
// shows and when it ends: vodctl nodes, which the refusal named, shows no
// disk fault, so the operator could not tell which nodes it meant.
func TestPrefetchDiskFaultRefusalsNameTheNodes(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
	n2 := e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	n3 := e.startSimNode("n3", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{stored("t1")}})
	e.setDiskFault(n1.fakeNode, true)
	e.setDiskFault(n2.fakeNode, true)
	ctx := context.Background()
	// n3 holds t1 (the others cannot write it): the cluster has it.
	_, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `the cluster already has "t1": held on node "n3"`) {
		t.Errorf("prefetch of t1 held by n3, n1 and n2 with a disk fault: %v, want AlreadyExists naming n3", err)
	}
	e.setDiskFault(n3.fakeNode, true)
	_, err = e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t2"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "reports a disk fault (n1, n2, n3: ") ||
		strings.Contains(err.Error(), "vodctl nodes") || !strings.Contains(err.Error(), "the manager's log") || !strings.Contains(err.Error(), "fills resume there once a test write succeeds") {
		t.Errorf("prefetch of t2 with every node reporting a disk fault: %v, want FailedPrecondition naming n1, n2, n3, where the fault shows and when it ends", err)
	}
	_, err = e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), `node "n1" cannot write its title cache`) || !strings.Contains(err.Error(), "fills resume there once a test write succeeds") {
		t.Errorf("prefetch of t2 on n1 with a disk fault: %v, want FailedPrecondition saying when it ends", err)
	}
}
