package acm

import (
	"context"
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// replicaOf returns title's copy on node in vodctl placement's view, or nil.
func (e *env) replicaOf(node, title string) *pb.Replica {
	e.t.Helper()
	for _, r := range e.placement(node).GetReplicas() {
		if r.GetTitleId() == title {
			return r
		}
	}
	return nil
}

// A prefetch ordered and not begun is "ordered" in vodctl placement (copy
// and pin) as in vodctl fills, with 0 bytes stored; once the node reports
// it filling, "filling" in both; complete, "stored". (Placement showed it
// filling from the order on, while fills said ordered.)
func TestPlacementSaysOrderedAsFillsDoes(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startSimNode("n1", testTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	ctx := context.Background()
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1)
	e.nextReport("n1") // a report without it: still ordered, not yet seen
	check := func(want string, stored int64) {
		t.Helper()
		f := e.fill("n1", "t1")
		r := e.replicaOf("n1", "t1")
		pins := e.placement("n1").GetNodePins()
		if f == nil || f.GetState() != want || r == nil || r.GetState() != want || r.GetStoredBytes() != stored ||
			len(pins) != 1 || pins[0].GetState() != want {
			t.Fatalf("fill %v, copy %v, pins %v: want %s in each, %d bytes stored", f, r, pins, want, stored)
		}
		if r.GetFilling() != (want != "stored") {
			t.Fatalf("copy %v: filling flag changed for %s", r, want)
		}
	}
	check("ordered", 0)
	n.progress("t1", 500_000)
	e.nextReport("n1")
	check("filling", 500_000)
	n.complete("t1")
	e.nextReport("n1")
	if f := e.fill("n1", "t1"); f != nil {
		t.Fatalf("fill %v listed once complete", f)
	}
	r := e.replicaOf("n1", "t1")
	if pins := e.placement("n1").GetNodePins(); r == nil || r.GetState() != "stored" || r.GetFilling() || len(pins) != 1 || pins[0].GetState() != "stored" {
		t.Fatalf("copy %v, pins %v: want stored", r, pins)
	}
}

// A fill on demand booked for a viewer just admitted (no node held the
// title) is listed reserved by vodctl fills and vodctl placement at once,
// from the manager's own booking, before the node's next report; that
// report, which does not show it yet, leaves it listed once, reserved.
// (It was missing from both until that report.)
func TestReservedFillListedAtOnce(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	// Between two heartbeats. (A report already on its way when muted
	// would make the first check pass without the booking listed; the
	// admission takes longer than such a report to arrive.)
	n.mute(true)
	e.admitOne("t1")
	check := func(when string) {
		t.Helper()
		f := e.fill("n1", "t1")
		r := e.replicaOf("n1", "t1")
		if f == nil || f.GetState() != "reserved" || f.GetPrefetch() || f.GetSizeBytes() != 1_500_000 ||
			r == nil || r.GetState() != "reserved" || !r.GetFilling() || r.GetStoredBytes() != 0 || r.GetSizeBytes() != 1_500_000 {
			t.Fatalf("%s: fill %v, copy %v: want both reserved, 0 of 1500000 bytes", when, f, r)
		}
		k := 0
		for _, f := range e.fills() {
			if f.GetTitleId() == "t1" {
				k++
			}
		}
		if k != 1 || len(e.placement("").GetReplicas()) != 1 {
			t.Fatalf("%s: %d fills of t1, replicas %v: want one of each", when, k, e.placement("").GetReplicas())
		}
	}
	check("before the node's next report")
	n.mute(false)
	e.nextReport("n1")
	check("after the node's report")
}
