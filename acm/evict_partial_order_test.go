package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// An operator's prefetch that failed leaving a partial, cancelled by the
// eviction of that partial (vodctl evict TITLE NODE: "it cancels the
// operator's failed prefetch there as well"), leaves the store too: a
// restarted manager (or the standby taking over) does not queue it again
// at the node's first report (it did, lifting the eviction hold on the
// way, and the node filled the title the operator had evicted).
func TestEvictOfAPartialCancelsTheStoredPrefetchOrder(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	n := e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if o := storedOrders(t, e); len(o) != 1 || o[0].Title != "t2" {
		t.Fatalf("stored orders %+v, want t2 on n1", o)
	}
	// The fill fails, keeping a partial.
	n.mu.Lock()
	n.failed = append(n.failed, &pb.FillFailure{TitleId: "t2", Reason: "origin: UNAVAILABLE", Prefetch: true, AtUnixMs: time.Now().UnixMilli()})
	n.partials = []*pb.PartialTitle{{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 600_000, Version: "v1"}}
	n.mu.Unlock()
	waitFor(t, 5*time.Second, "t2 in backoff on n1", func() bool {
		f := e.fill("n1", "t2")
		return f != nil && f.State == "backoff"
	})
	ack, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "partial") {
		t.Fatalf("evict of the partial: %v %v", ack, err)
	}
	if f := e.fill("n1", "t2"); f != nil {
		t.Fatalf("fill %v after the evict, want the operator's prefetch cancelled", f)
	}
	if o := storedOrders(t, e); len(o) != 0 {
		t.Fatalf("stored orders after the evict cancelled the prefetch: %+v, want none", o)
	}
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newManager(t, dir, nil)
	e2.startNode("n1", nodeOpts{})
	e2.nextReport("n1")
	if f := e2.fill("n1", "t2"); f != nil {
		t.Fatalf("restarted manager: fill %v, want the cancelled prefetch not restored", f)
	}
}
