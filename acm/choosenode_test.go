package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// An operator's prefetch without a node, with no Replicator, goes to the
// node with the most free disk it measured: a node that reports its free
// disk unknown (-1, counted as unknownDiskFree) does not win by that;
// among such nodes the one with the most budget left (disk_bytes less
// the bytes stored) does.
func TestChooseNodePrefersMeasuredFreeDisk(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.StoragePlanner = smm.PlannerNone })
	if e.m.rep != nil {
		t.Fatal("the test needs a planner without a Replicator")
	}
	held := []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}
	e.startNode("n1", nodeOpts{diskFree: -1, disk: 2_000_000_000})
	e.startNode("n2", nodeOpts{diskFree: 500_000_000, titles: held})
	e.startNode("n3", nodeOpts{diskFree: -1, disk: 1 << 40})
	for _, id := range []string{"n1", "n2", "n3"} {
		e.awaitReports(id)
	}
	choose := func(title string) string {
		t.Helper()
		tt, ok := e.m.titles()[title]
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		if !ok {
			t.Fatalf("title %s not in the catalog", title)
		}
		id, err := e.m.chooseNodeLocked(tt, e.m.now())
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		return id
	}
	if got := choose("t2"); got != "n2" {
		t.Errorf("t2 on %s, want n2 (its free disk measured, the others' unknown)", got)
	}
	if got := choose("t1"); got != "n3" {
		t.Errorf("t1 (held by n2) on %s, want n3 (the most budget left of the nodes whose free disk is unknown)", got)
	}
}

// An operator's prefetch without a node while every node is drained (or
// at weight 0) is refused as out of service (FAILED_PRECONDITION, as a
// prefetch naming a drained node), saying so, not as a want of room
// (RESOURCE_EXHAUSTED "no room"): an operator would look for disk to
// free. Back in service, a node takes it.
func TestPrefetchWithoutNodeWhileEveryNodeIsDrained(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	e.startNode("n2", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.setNode(&pb.SetNodeRequest{NodeId: "n2", Weight: ptr[int32](0)})
	ctx := context.Background()
	_, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no node is in service") || strings.Contains(err.Error(), "room") {
		t.Fatalf("prefetch with every node out of service: %v, want FailedPrecondition saying no node is in service", err)
	}
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false)})
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3"}); err != nil || ack.NodeId != "n1" {
		t.Fatalf("prefetch with n1 back in service: %v %v, want on n1", ack, err)
	}
}

// A prefetch naming a node out of service says why that node is: draining
// (and how to undrain it) or at weight 0, not a list of the possible
// causes that leaves the operator to find which.
func TestPrefetchOnANodeOutOfServiceSaysWhy(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	e.startNode("n2", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.setNode(&pb.SetNodeRequest{NodeId: "n2", Weight: ptr[int32](0)})
	ctx := context.Background()
	for node, want := range map[string]string{"n1": "is draining (vodctl node n1 --undrain", "n2": "has weight 0"} {
		_, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: node})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "dead") {
			t.Errorf("prefetch on %s: %v, want FailedPrecondition saying it %s", node, err, want)
		}
	}
}

// A node out of service for more than one reason names each, and the
// command that puts it back in service only where that command is all it
// takes: a node both draining and at weight 0 was said to be draining,
// "vodctl node N --undrain puts it back in service", which left it at
// weight 0 and out of service; a dead (or unreachable) node that is also
// draining was said to be dead only, and stayed out of service once back.
func TestPrefetchOnANodeOutOfServiceForTwoReasons(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true), Weight: ptr[int32](0)})
	_, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t3", NodeId: "n1"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "is draining and has weight 0 (vodctl node n1 --undrain --weight N puts it back in service)") {
		t.Errorf("prefetch on a node draining at weight 0: %v, want FailedPrecondition naming both and the command that undoes both", err)
	}
	node := func(n lsm.Node, weight int) lsm.Node {
		n.ID, n.Weight = "n1", weight
		return n
	}
	for _, c := range []struct {
		n    lsm.Node
		want string
	}{
		{node(lsm.Node{Alive: true, Draining: true}, 100), "is draining (vodctl node n1 --undrain puts it back in service)"},
		{node(lsm.Node{Alive: true}, 0), "has weight 0 (vodctl node n1 --weight N puts it back in service)"},
		{node(lsm.Node{Alive: true, Unreachable: true}, 0), "is unreachable (its heartbeat stream broke; dead unless it reconnects) and has weight 0 (once back, vodctl node n1 --weight N puts it back in service)"},
		{node(lsm.Node{Draining: true}, 100), "is dead (no heartbeat: vodctl nodes) and is draining (once back, vodctl node n1 --undrain puts it back in service)"},
		{node(lsm.Node{}, 100), "is dead (no heartbeat: vodctl nodes)"},
	} {
		if got := outOfService(&c.n); got != c.want {
			t.Errorf("outOfService:\n got %q\nwant %q", got, c.want)
		}
	}
}
