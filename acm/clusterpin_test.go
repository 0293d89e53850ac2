package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestEvictACopyOfAClusterPinnedTitle: a title pinned to the cluster held
// whole on two nodes (the planner copies it off a node that drains, and
// the node comes back with its own) may lose one copy by the operator's
// order, the answer saying it stays pinned; its last copy in service may
// not: the pin keeps it in the cluster. A drained node's copy does not
// count as one in service.
func TestEvictACopyOfAClusterPinnedTitle(t *testing.T) {
	ctx := context.Background()
	e := newManagerWith(t, "", unhinted(), fastStorage)
	held := simOpts{held: []*pb.StoredTitle{stored("t2")}}
	e.startSimNode("n1", storageTitles, held)
	e.startSimNode("n2", storageTitles, held)
	e.startSimNode("n3", storageTitles, held)
	if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2"}); err != nil {
		t.Fatal(err)
	}
	ack, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "stays pinned to the cluster") {
		t.Fatalf("evict one of three copies of a cluster-pinned title: %v %v", ack, err)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n3", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	_, err = e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n2"})
	if grpcCode(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "pinned to the cluster and no other node in service holds it whole") {
		t.Fatalf("evict the last copy in service (the other on a drained node): %v, want FAILED_PRECONDITION", err)
	}
}
