package acm

import (
	"context"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestPlacementOfADeadNode: while a node misses its heartbeats, vodctl
// placement says so of its copies, complete ones included, and of the
// pins to it, whether it held the title or not ("node down"), rather
// than "stored" (as if it could serve) or "missing" / "ordered" (to be
// prefetched there);
// once it is back, they are "stored" again.
func TestPlacementOfADeadNode(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{stored("t1")}})
	ctx := context.Background()
	for _, title := range []string{"t1", "t2"} {
		if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"}); err != nil {
			t.Fatal(err)
		}
	}
	states := func() (replica string, pins map[string]string) {
		t.Helper()
		pl := e.placement("n1")
		pins = map[string]string{}
		for _, p := range pl.NodePins {
			pins[p.TitleId] = p.State
		}
		for _, r := range pl.Replicas {
			if r.TitleId == "t1" {
				replica = r.State
			}
		}
		return replica, pins
	}
	if r, pins := states(); r != "stored" || pins["t1"] != "stored" || pins["t2"] == "node down" {
		t.Fatalf("n1 alive: t1's copy %q, pins %v; want stored, t1 stored, t2 not node down", r, pins)
	}
	n.stop()
	waitFor(t, 10*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
	if r, pins := states(); r != "node down" || pins["t1"] != "node down" || pins["t2"] != "node down" {
		t.Fatalf("n1 dead: t1's copy %q, pins %v; want node down for all", r, pins)
	}
	e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{stored("t1")}})
	if r, pins := states(); r != "stored" || pins["t1"] != "stored" {
		t.Fatalf("n1 back: t1's copy %q, pins %v; want stored", r, pins)
	}
}
