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
// count as one in service, nor one on a node whose egress_bps is less
// than the title's bitrate.
func TestEvictACopyOfAClusterPinnedTitle(t *testing.T) {
	ctx := context.Background()
	e := newManagerWith(t, "", unhinted(), fastStorage)
	held := simOpts{held: []*pb.StoredTitle{stored("t2")}}
	e.startSimNode("n1", storageTitles, held)
	e.startSimNode("n2", storageTitles, held)
	e.startSimNode("n3", storageTitles, held)
	e.startSimNode("n4", storageTitles, simOpts{held: held.held, egress: titleBps / 2}) // cannot stream it
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
		t.Fatalf("evict the last copy in service (the others on a drained node and on one that cannot stream it): %v, want FAILED_PRECONDITION", err)
	}
}

// TestPinWarningCountsClusterPinnedCopies: a pin to a node whose disk is
// taken by its copies of titles pinned to the cluster (never evicted
// either) is taken with the warning that not all will be there; it was
// answered "pinned", and the title stayed missing there with no word.
func TestPinWarningCountsClusterPinnedCopies(t *testing.T) {
	ctx := context.Background()
	e := newManagerWith(t, "", unhinted(), fastStorage)
	e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000, held: []*pb.StoredTitle{stored("t1"), stored("t2")}})
	for _, title := range []string{"t1", "t2"} {
		if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: title}); err != nil {
			t.Fatal(err)
		}
	}
	ack, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "copies of titles pinned to the cluster take 3000000 bytes, more than its disk (2500000 bytes)") {
		t.Fatalf("pin to a node full of cluster-pinned copies: %v %v", ack, err)
	}
}
