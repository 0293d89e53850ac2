package acm

import (
	"context"
	"slices"
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
	if err != nil || !strings.Contains(ack.GetMessage(), "partial") || !strings.Contains(ack.GetMessage(), "the operator's failed prefetch there is cancelled") {
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

// The operator's eviction of a stale copy whose title a stored prefetch
// order waits for (restored by a restarted manager: queued once the copy
// goes) cancels that order in the manager as in the store: the eviction
// removed it from the store only, and the node's next report, without
// the copy, queued it again, lifting the eviction hold on the way.
func TestEvictOfAStaleCopyCancelsTheRestoredPrefetchOrder(t *testing.T) {
	dir := t.TempDir()
	e := newManagerWith(t, dir, versioned(testTitles, "v2"), nil)
	orderPrefetchWhileAway(t, e)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newManagerWith(t, dir, versioned(testTitles, "v2"), nil)
	e2.m.originDown.Store(true) // the stale copy is the best there is: kept
	o := startObedient(t, e2)
	e2.nextReport("n")
	if len(storedOrders(t, e2)) != 1 {
		t.Fatalf("stored orders %+v, want the operator's t3 on n waiting for the stale copy", storedOrders(t, e2))
	}
	if _, err := e2.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil {
		t.Fatalf("evict of the stale copy: %v", err)
	}
	waitFor(t, 5*time.Second, "the stale copy evicted by the node", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return slices.Contains(o.got, "evict")
	})
	e2.nextReport("n")
	e2.nextReport("n")
	if f := e2.fill("n", "t3"); f != nil {
		t.Errorf("after the operator's eviction: fill %v, want the restored prefetch cancelled", f)
	}
	e2.m.mu.Lock()
	held := e2.m.rep.Held("n", "t3", e2.m.now())
	e2.m.mu.Unlock()
	if !held {
		t.Error("the eviction hold of t3 on n lifted after the operator's eviction")
	}
	if o := storedOrders(t, e2); len(o) != 0 {
		t.Errorf("stored orders after the eviction: %+v, want none", o)
	}
}
