package acm

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node that was down when the manager restarted is still shown down:
// ListNodes names it in not_registered and the metrics export
// vodcluster_node_up 0 for it (the node-down alert went quiet at the
// restart, and vodctl nodes no longer listed it), until it registers
// again or the operator forgets it; a pin to it is "not registered",
// not "unknown node".
func TestNodesKnownFromTheStoreShownDownAfterARestart(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, withMetrics)
	e.startNode("n1", nodeOpts{})
	e.startNode("n2", nodeOpts{})
	if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	r := newManager(t, dir, withMetrics)
	ctx := context.Background()
	notRegistered := func() []string {
		t.Helper()
		ln, err := r.admin.ListNodes(ctx, &pb.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return ln.NotRegistered
	}
	if got := notRegistered(); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("not_registered after the restart: %v, want [n1 n2]", got)
	}
	if got := nodeSeries(scrape(t, r.m), "n1"); !slices.Contains(got, `vodcluster_node_up{node="n1"} 0`) {
		t.Fatalf("n1's series after the restart: %v, want vodcluster_node_up 0", got)
	}
	pl, err := r.admin.ListPlacement(ctx, &pb.ListPlacementRequest{NodeId: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.NodePins) != 1 || pl.NodePins[0].State != "not registered" {
		t.Fatalf("pins to n2 after the restart: %v, want t1's, not registered", pl.NodePins)
	}
	// A node the store knows may be pinned to before it registers (it
	// was refused NOT_FOUND "not registered" while unpinning it was
	// taken); one it never knew may not.
	ack, err := r.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n2"})
	if err != nil || !strings.Contains(ack.GetMessage(), "n2 has not registered since this manager started (the store knows it): the title is fetched there once it registers") {
		t.Fatalf("pin to n2, known from the store: %v %v", ack, err)
	}
	if _, err := r.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n9"}); status.Code(err) != codes.NotFound {
		t.Fatalf("pin to a node never known: %v, want NOT_FOUND", err)
	}
	r.startNode("n1", nodeOpts{})
	if got := notRegistered(); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("not_registered once n1 registered: %v, want [n2]", got)
	}
	if got := nodeSeries(scrape(t, r.m), "n1"); !slices.Contains(got, `vodcluster_node_up{node="n1"} 1`) || slices.Contains(got, `vodcluster_node_up{node="n1"} 0`) {
		t.Fatalf("n1's series once registered: %v", got)
	}
	if _, err := r.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	if got := notRegistered(); len(got) != 0 {
		t.Fatalf("not_registered once n2 was forgotten: %v", got)
	}
	if got := nodeSeries(scrape(t, r.m), "n2"); len(got) != 0 {
		t.Fatalf("n2's series once forgotten: %v", got)
	}
}
