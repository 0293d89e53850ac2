package acm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// evictCommand waits (at most waitForMin) for an EvictCommand to reach n, skipping
// other commands, and returns its title.
func (n *fakeNode) evictCommand(t *testing.T) string {
	t.Helper()
	deadline := time.After(waitForMin)
	for {
		select {
		case c := <-n.cmds:
			if ev := c.GetEvict(); ev != nil {
				return ev.GetTitleId()
			}
		case <-deadline:
			t.Fatalf("no evict command reached %s within %v", n.id, waitForMin)
			return ""
		}
	}
}

// placedPartials lists the partials ListPlacement gives for req as
// "title@node stored/size" strings, with " since", " pinned" and " stale"
// when set.
func (e *env) placedPartials(req *pb.ListPlacementRequest) []string {
	e.t.Helper()
	pl, err := e.admin.ListPlacement(context.Background(), req)
	if err != nil {
		e.t.Fatalf("ListPlacement %v: %v", req, err)
	}
	var out []string
	for _, p := range pl.Partials {
		s := fmt.Sprintf("%s@%s %d/%d", p.TitleId, p.NodeId, p.StoredBytes, p.SizeBytes)
		if p.SinceUnixMs != 0 {
			s += fmt.Sprintf(" since %d", p.SinceUnixMs)
		}
		if p.Pinned {
			s += " pinned"
		}
		if p.Stale {
			s += " stale"
		}
		out = append(out, s)
	}
	return out
}

// TestAdminListsPartials: ListPlacement lists the partial fills the nodes
// report (bytes kept, the title's size, when the fill stopped, pinned,
// stale when the size is not the catalog's) apart from the replicas, which
// stay as they were, filtered by node and title; ListNodes counts each
// node's partials and their bytes.
func TestAdminListsPartials(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	n1 := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	n2 := e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:3"})
	n1.setPartials(
		&pb.PartialTitle{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 555_000, Version: "v1", SinceUnixMs: 1_700_000_000_000},
		&pb.PartialTitle{TitleId: "t3", SizeBytes: 999_000, StoredBytes: 900_000, Version: "v0"}, // the catalog's t3 has 1_500_000 bytes
	)
	n2.setPartials(&pb.PartialTitle{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 300_000, Version: "v1"})
	for _, id := range []string{"n1", "n2"} {
		e.nextReport(id)
		e.nextReport(id) // the one in flight when the partials were set may lack them
	}

	want := []string{"t2@n1 555000/1500000 since 1700000000000", "t2@n2 300000/1500000", "t3@n1 900000/999000 stale"}
	if got := e.placedPartials(&pb.ListPlacementRequest{}); !slices.Equal(got, want) {
		t.Fatalf("partials %q, want %q", got, want)
	}
	pl, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{})
	if err != nil || len(pl.Replicas) != 1 || pl.Replicas[0].TitleId != "t1" || pl.Replicas[0].StoredBytes != 1_500_000 {
		t.Fatalf("replicas with partials beside them: %v %v", pl.GetReplicas(), err)
	}
	if got := e.placedPartials(&pb.ListPlacementRequest{NodeId: "n2"}); !slices.Equal(got, want[1:2]) {
		t.Errorf("partials of n2: %q", got)
	}
	if got := e.placedPartials(&pb.ListPlacementRequest{TitleId: "t3"}); !slices.Equal(got, want[2:]) {
		t.Errorf("partials of t3: %q", got)
	}
	if got := e.placedPartials(&pb.ListPlacementRequest{TitleId: "t1"}); len(got) != 0 {
		t.Errorf("partials of t1, held whole: %q", got)
	}

	for id, w := range map[string]struct {
		partials int32
		bytes    int64
		titles   int32
	}{"n1": {2, 1_455_000, 1}, "n2": {1, 300_000, 0}} {
		info := e.nodeInfo(id)
		if info.Partials != w.partials || info.PartialBytes != w.bytes || info.Titles != w.titles {
			t.Errorf("%s: %d partials of %d bytes, %d titles; want %d of %d, %d", id, info.Partials, info.PartialBytes, info.Titles, w.partials, w.bytes, w.titles)
		}
	}

	// (The pin makes the planner prefetch t2 there, which resumes the partial.)
	if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	if got := e.placedPartials(&pb.ListPlacementRequest{TitleId: "t2", NodeId: "n2"}); !slices.Equal(got, []string{"t2@n2 300000/1500000 pinned"}) {
		t.Errorf("the partial of a title pinned there: %q", got)
	}

	// A node that resumed its partial (a fill) no longer lists it.
	n2.setPartials()
	e.nextReport("n2")
	e.nextReport("n2")
	if got := e.placedPartials(&pb.ListPlacementRequest{NodeId: "n2"}); len(got) != 0 {
		t.Errorf("partials of n2 after it reported none: %q", got)
	}
	if info := e.nodeInfo("n2"); info.Partials != 0 || info.PartialBytes != 0 {
		t.Errorf("n2 after it reported none: %d partials of %d bytes", info.Partials, info.PartialBytes)
	}
}

// TestAdminEvictsAPartial: Evict of a title a node keeps only a partial
// of orders the node (EvictCommand, as for a copy) to remove it; the
// manager forgets it at once (the listing, the scheduler, the planner),
// though a report sent before the node had the order still lists it.
// Refused (FAILED_PRECONDITION) while a fill of it runs or is reserved
// there for a viewer, or while it is pinned; NOT_FOUND once it is gone.
func TestAdminEvictsAPartial(t *testing.T) {
	// No planner: the pin below orders no prefetch.
	e := newManager(t, "", func(m *Manager) { m.StoragePlanner = smm.PlannerNone })
	ctx := context.Background()
	n := e.startNode("n1", nodeOpts{})
	n.setPartials(
		&pb.PartialTitle{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 600_000, Version: "v1"},
		&pb.PartialTitle{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 750_000, Version: "v1"},
		&pb.PartialTitle{TitleId: "t3", SizeBytes: 999_000, StoredBytes: 100_000, Version: "v0"}, // stale: kept apart
	)
	e.nextReport("n1")
	e.nextReport("n1")
	evict := func(title string) (*pb.PlacementAck, error) {
		return e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
	}

	// Pinned to the cluster: refused, as for a copy.
	if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := evict("t2"); grpcCode(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "pinned") {
		t.Fatalf("evicting the partial of a pinned title: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := e.admin.Unpin(ctx, &pb.PlacementRequest{TitleId: "t2"}); err != nil {
		t.Fatal(err)
	}

	// The node's stream broken: no report comes while the manager's view
	// is looked at; the order waits for the node's next stream.
	n.stop()
	// Once the manager has seen the stream break: an order sent down a
	// stream the node has already left is lost (gRPC's Send does not wait
	// for the peer), and the node's next reports would list it again.
	waitFor(t, 5*time.Second, "the manager to see n1's stream break", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		sn := e.m.sched.Node("n1")
		return sn != nil && sn.Unreachable
	})
	ack, err := evict("t2")
	if err != nil || !strings.Contains(ack.Message, "partial fill") || !strings.Contains(ack.Message, "750000 of 1500000 bytes kept, 50%") {
		t.Fatalf("evicting a partial: %v %v", ack, err)
	}
	want := []string{"t1@n1 600000/1500000", "t3@n1 100000/999000 stale"}
	if got := e.placedPartials(&pb.ListPlacementRequest{}); !slices.Equal(got, want) {
		t.Fatalf("partials after the eviction: %q, want %q", got, want)
	}
	e.m.mu.Lock()
	ns := e.m.nodes["n1"]
	_, inSched := e.m.sched.Partial("n1", "t2")
	_, inPlan := ns.partials["t2"]
	// A report sent before the node had the order still lists it: left out.
	all := append([]*pb.PartialTitle(nil), n.partials...)
	e.m.syncPartialsLocked(ns, all)
	_, back := ns.reportedPartials["t2"]
	_, evicting := ns.evictingPartials["t2"]
	e.m.syncPartialsLocked(ns, []*pb.PartialTitle{all[0], all[2]}) // and one after the node removed it
	_, still := ns.evictingPartials["t2"]
	e.m.mu.Unlock()
	if inSched || inPlan {
		t.Errorf("after its eviction the partial is still in the scheduler's view (%v) or the planner's (%v)", inSched, inPlan)
	}
	if back || !evicting || still {
		t.Errorf("a report sent before the order: partial listed %v (want false), removal awaited %v (want true), still awaited once gone %v (want false)", back, evicting, still)
	}

	n.setPartials(all[0], all[2]) // removed, as the node does on the order
	n.heartbeat()
	if got := n.evictCommand(t); got != "t2" {
		t.Fatalf("evict command for %q, want t2", got)
	}
	e.nextReport("n1")
	if got := e.placedPartials(&pb.ListPlacementRequest{}); !slices.Equal(got, want) {
		t.Fatalf("partials once the node removed it: %q, want %q", got, want)
	}
	if _, err := evict("t2"); grpcCode(err) != codes.NotFound {
		t.Fatalf("evicting it again: %v, want NOT_FOUND", err)
	}

	// A stale partial (a size not the catalog's) holds disk too: evictable.
	if ack, err := evict("t3"); err != nil || !strings.Contains(ack.Message, "partial fill") {
		t.Fatalf("evicting a stale partial: %v %v", ack, err)
	}
	if got := n.evictCommand(t); got != "t3" {
		t.Fatalf("evict command for %q, want t3", got)
	}

	// A viewer admitted for t1 goes to n1, where its fill will resume the
	// partial: refused while reserved, and while the fill runs.
	sid := e.admitOne("t1")
	if _, err := evict("t1"); grpcCode(err) != codes.FailedPrecondition {
		t.Fatalf("evicting a partial a viewer's fill is to resume: %v, want FAILED_PRECONDITION", err)
	}
	n.mu.Lock()
	n.titles = []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 700_000, Filling: true, Sessions: 1}}
	n.partials = nil // the fill took it over
	n.mu.Unlock()
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	e.nextReport("n1")
	e.nextReport("n1")
	if _, err := evict("t1"); grpcCode(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "filling") {
		t.Fatalf("evicting a title whose fill resumes its partial: %v, want FAILED_PRECONDITION", err)
	}
	select {
	case c := <-n.cmds:
		if c.GetEvict() != nil {
			t.Fatalf("a refused eviction sent %v", c)
		}
	default:
	}
}
