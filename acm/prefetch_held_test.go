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

// A prefetch of a title a node holds or fills is refused ALREADY_EXISTS
// saying which it is there: held, filling or ordered (each answered
// "already holds or fills", though vodctl prefetch --help named a third
// case, queued); naming no node, the refusal names the node and which (a
// second copy was placed on another node) while a node that has none
// still takes it when named.
func TestPrefetchRefusalSaysHeldFillingOrOrdered(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), fastStorage)
	ctx := context.Background()
	n1 := e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{{TitleId: "t2", SizeBytes: 1_000_000, StoredBytes: 1_000_000}}})
	// n2 leaves its prefetches ordered (not begun) until the test reports progress.
	n2 := e.startSimNode("n2", storageTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	waitFor(t, 5*time.Second, "n1's copy of t2 seen", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"] != nil && e.m.nodes["n1"].titles["t2"] != nil
	})
	refused := func(req *pb.PlacementRequest, want string) {
		t.Helper()
		ack, err := e.admin.Prefetch(ctx, req)
		if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), want) {
			t.Fatalf("prefetch %v: %v %v, want ALREADY_EXISTS with %q", req, ack, err, want)
		}
	}
	refused(&pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, `"t2" is already held on node "n1" (vodctl placement --title t2)`)
	refused(&pb.PlacementRequest{TitleId: "t2"}, `the cluster already has "t2": held on node "n1" (`)
	if n2.count("prefetch t2") != 0 {
		t.Fatalf("a prefetch naming no node of a title n1 holds reached n2: %v", n2.commands())
	}

	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	n2.waitCommand(t, "prefetch t3", 1)
	refused(&pb.PlacementRequest{TitleId: "t3", NodeId: "n2"}, `"t3" is already ordered (its fill not started yet) on node "n2" (vodctl fills)`)
	n2.progress("t3", 100_000)
	waitFor(t, 5*time.Second, "the fill of t3 reported", func() bool {
		f := e.fill("n2", "t3")
		return f != nil && f.State == "filling"
	})
	refused(&pb.PlacementRequest{TitleId: "t3", NodeId: "n2"}, `"t3" is already filling on node "n2" (vodctl fills)`)
	refused(&pb.PlacementRequest{TitleId: "t3"}, `the cluster already has "t3": filling on node "n2"`)
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n1"}); err != nil || ack.GetNodeId() != "n1" {
		t.Fatalf("prefetch of t3 naming n1: %v %v, want it ordered there", ack, err)
	}
	// One phrase for each state, its nodes in order.
	n2.complete("t3")
	waitFor(t, 5*time.Second, "n2's copy of t3 complete", func() bool { return e.fill("n2", "t3") == nil })
	n1.waitCommand(t, "prefetch t3", 1)
	n1.progress("t3", 100_000)
	waitFor(t, 5*time.Second, "n1's fill of t3 reported", func() bool {
		f := e.fill("n1", "t3")
		return f != nil && f.State == "filling"
	})
	refused(&pb.PlacementRequest{TitleId: "t3"}, `the cluster already has "t3": filling on node "n1"; held on node "n2" (`)
	n1.complete("t3")
	waitFor(t, 5*time.Second, "n1's copy of t3 complete", func() bool { return e.fill("n1", "t3") == nil })
	refused(&pb.PlacementRequest{TitleId: "t3"}, `the cluster already has "t3": held on nodes "n1", "n2" (`)
	t.Run("stale copy", prefetchPassesOverAStaleCopy)
}

// prefetchPassesOverAStaleCopy: a stale copy (the title replaced at the
// origin; the copy kept while a viewer plays it, vodctl placement's
// stale) is not the cluster's copy of the title: a prefetch naming no
// node fetches the current version on a node lacking it (it was refused
// ALREADY_EXISTS, "the cluster already has"), and one naming the stale
// copy's node says it is stale. With no node lacking it, a prefetch
// naming none says every node that could fetch it holds a stale copy.
func prefetchPassesOverAStaleCopy(t *testing.T) {
	e := newManagerWith(t, "", versioned(unhinted(), "v2"), nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 20 * titleBps, titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_000_000, StoredBytes: 1_000_000, Version: "v1", Sessions: 1}}})
	waitFor(t, 5*time.Second, "n1's copy of t1 seen stale", func() bool {
		for _, r := range e.placement("n1").GetReplicas() {
			if r.GetTitleId() == "t1" && r.GetStale() {
				return true
			}
		}
		return false
	})
	ctx := context.Background()
	_, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if want := `"t1" is already held (stale: the origin has another version) on node "n1" (vodctl placement --title t1)`; status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), want) {
		t.Fatalf("prefetch of t1 on n1, holding a stale copy: %v, want ALREADY_EXISTS with %q", err, want)
	}
	_, err = e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
	if want := `every node in service that can fetch "t1" holds a stale copy or fill of it`; status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), want) {
		t.Fatalf("prefetch of t1 naming no node, n1 alone holding a stale copy: %v, want FAILED_PRECONDITION with %q", err, want)
	}
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", egress: 10 * titleBps})
	e.awaitReports("n2")
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"}); err != nil || ack.GetNodeId() != "n2" {
		t.Fatalf("prefetch of t1 naming no node, n1 holding a stale copy: %v %v, want it ordered on n2", ack, err)
	}
}
