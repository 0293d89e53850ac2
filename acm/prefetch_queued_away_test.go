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

// quietStorage plans only when a fill ends or the operator changes a pin
// (no periodic plan, no shift check, none after a registration within
// the test: the heartbeat interval that delays it is a minute), with no
// popularity hint to plan for (unhinted) and one fill per node: an
// operator's prefetch queued on a node stays queued until the test frees
// a slot, and the plan never orders it meanwhile.
func quietStorage(m *Manager) {
	m.PlanInterval, m.ShiftCheck = time.Hour, time.Hour
	m.Scheduler.HeartbeatInterval = time.Minute
	m.Replicator.OffPeak = smm.Window{Start: 0, End: 24 * time.Hour}
	m.Replicator.MaxFillsPerNode = 1
}

// filling is title id (1 MB) as a node reports it while a viewer's fill
// of it is under way: it takes one of the node's fill slots and an origin
// channel.
func filling(id string) *pb.StoredTitle {
	return &pb.StoredTitle{TitleId: id, SizeBytes: 1_000_000, StoredBytes: 1000, Filling: true}
}

// queueOn orders title on node, which must queue it.
func (e *env) queueOn(node, title string) {
	e.t.Helper()
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: title, NodeId: node})
	if err != nil || !strings.Contains(ack.GetMessage(), "queued") {
		e.t.Fatalf("prefetch of %s on %s: %v %v, want it queued", title, node, ack, err)
	}
	if f := e.fill(node, title); f == nil || f.State != "queued" {
		e.t.Fatalf("fill of %s on %s %+v, want queued", title, node, f)
	}
}

// A prefetch naming no node of a title whose prefetch waits queued on a
// node that has since gone out of service (drained, dead) passes that
// node over: the title is placed on a node in service, as if it were
// queued nowhere, the answer names the node passed over and why, and the
// order queued there stays (for the node's return). It was refused
// ALREADY_EXISTS naming the node out of service, so the operator could
// not have it prefetched without naming a node.
func TestPrefetchWithNoNodeOfATitleQueuedOnANodeOutOfService(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  func(e *env, n1 *simNode)
		why  string
	}{
		{"drained", func(e *env, _ *simNode) { e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}) }, "draining"},
		{"dead", func(_ *env, n1 *simNode) { n1.leave() }, "not in service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newManagerWith(t, "", unhinted(), quietStorage)
			n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p")}})
			e.queueOn("n1", "t1") // n1 fills p: at its fill limit
			n2 := e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
			tc.out(e, n1)
			waitFor(t, 5*time.Second, "n1 out of service", func() bool {
				e.m.mu.Lock()
				defer e.m.mu.Unlock()
				return !e.m.sched.InService(e.m.sched.Node("n1"))
			})
			ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
			if err != nil || ack.GetNodeId() != "n2" || !strings.HasPrefix(ack.GetMessage(), "prefetch ordered") ||
				!strings.Contains(ack.GetMessage(), `node "n1" is not in service`) || !strings.Contains(ack.GetMessage(), tc.why) ||
				!strings.Contains(ack.GetMessage(), "left queued there") {
				t.Fatalf("prefetch of t1 naming no node, queued on n1 out of service: %v %v, want it ordered on n2, the answer naming n1 and why", ack, err)
			}
			n2.waitCommand(t, "prefetch t1", 1)
			if f := e.fill("n1", "t1"); f == nil || f.State != "queued" {
				t.Fatalf("fill of t1 on n1 %+v, want it still queued", f)
			}
		})
	}
}

// With the title queued on several nodes, a prefetch naming no node
// takes one in service as named, even when one out of service comes
// first by id: ALREADY_EXISTS naming the node in service, nothing placed
// elsewhere.
func TestPrefetchWithNoNodeOfATitleQueuedOnSeveralNodes(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p")}})
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("q")}})
	n3 := e.startSimNode("n3", storageTitles, simOpts{disk: 5_000_000})
	e.queueOn("n1", "t1")
	e.queueOn("n2", "t1")
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `a prefetch of "t1" on node "n2" is already queued`) {
		t.Fatalf("prefetch of t1 naming no node, queued on n1 (drained) and n2: %v %v, want AlreadyExists naming n2", ack, err)
	}
	if f := e.fill("n3", "t1"); f != nil || n3.count("prefetch t1") != 0 {
		t.Fatalf("fill of t1 on n3 %+v, commands %v: want none", f, n3.commands())
	}
}

// A prefetch naming no node of a title queued on a node, once a slot is
// free there (the origin channel the queued order waited for freed by
// another node's departure, which asks for no plan), is ordered there at
// once, as one naming the node is: not refused as queued, not placed on
// the node the manager would otherwise choose (n3: no title stored, where
// n1 holds one).
func TestPrefetchWithNoNodeOrderedWhereQueuedOnceASlotIsFree(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.OriginChannels = 1
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{stored("r")}})
	n2 := e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p")}})
	n3 := e.startSimNode("n3", storageTitles, simOpts{disk: 5_000_000})
	e.queueOn("n1", "t1") // n2's fill takes the one origin channel
	ctx := context.Background()
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"}); status.Code(err) != codes.AlreadyExists ||
		!strings.Contains(err.Error(), `on node "n1" is already queued`) || !strings.Contains(err.Error(), "origin channels") {
		t.Fatalf("prefetch of t1 naming no node while queued on n1: %v, want AlreadyExists naming n1, waiting for an origin channel", err)
	}
	n2.leave() // its fill no longer takes the channel
	waitFor(t, 5*time.Second, "the origin channel free", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.prefetchWaitLocked("n1") == ""
	})
	if f := e.fill("n1", "t1"); f == nil || f.State != "queued" {
		t.Fatalf("fill of t1 on n1 %+v, want it still queued (no plan ordered it)", f)
	}
	ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
	if err != nil || ack.GetNodeId() != "n1" || !strings.HasPrefix(ack.GetMessage(), "prefetch ordered;") {
		t.Fatalf("prefetch of t1 naming no node, queued on n1 with a slot free: %v %v, want it ordered on n1", ack, err)
	}
	n1.waitCommand(t, "prefetch t1", 1)
	if f := e.fill("n1", "t1"); f == nil || f.State == "queued" {
		t.Fatalf("fill of t1 on n1 %+v, want it ordered", f)
	}
	if f := e.fill("n3", "t1"); f != nil || n3.count("prefetch t1") != 0 {
		t.Fatalf("fill of t1 on n3 %+v, commands %v: want none", f, n3.commands())
	}
}

// The order left queued on a node passed over is carried out once the
// node can fill again: the title is filled there too, a second copy, as
// the answer says, naming the command that cancels it (vodctl evict t1
// n1), which drops it.
func TestPrefetchPassedOverOrderFilledOnTheNodesReturn(t *testing.T) {
	for _, cancel := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept", true: "cancelled"}[cancel], func(t *testing.T) {
			e := newManagerWith(t, "", unhinted(), quietStorage)
			n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p")}})
			e.queueOn("n1", "t1") // n1 fills p: at its fill limit
			n2 := e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
			e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
			ctx := context.Background()
			ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
			if err != nil || ack.GetNodeId() != "n2" || !strings.Contains(ack.GetMessage(), "ordered there too once it can be filled; to cancel: vodctl evict t1 n1)") {
				t.Fatalf("prefetch of t1 naming no node, queued on n1 (drained): %v %v, want it on n2, the answer saying how to cancel the order left on n1", ack, err)
			}
			n2.waitCommand(t, "prefetch t1", 1)
			if cancel {
				if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
					t.Fatal(err)
				}
				if f := e.fill("n1", "t1"); f != nil {
					t.Fatalf("fill of t1 on n1 %+v after its cancellation, want none", f)
				}
				return
			}
			e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false)})
			n1.complete("p") // a fill's end: a plan, with a slot free on n1
			n1.waitCommand(t, "prefetch t1", 1)
		})
	}
}
