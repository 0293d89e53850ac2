package acm

import (
	"context"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestOperatorSettingsSurviveRestart: a drain and a weight set by the
// operator, and an eviction hold, are in the store: a manager restarted
// on the same data directory applies the drain and weight when the node
// registers again (and tells the node it drains), and keeps the hold.
func TestOperatorSettingsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := newManagerWith(t, dir, storageTitles, fastStorage)
	n := e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1")}})
	e.startSimNode("n2", storageTitles, simOpts{})
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2", Weight: ptr(int32(40))}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "drain true", 1)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e = newManagerWith(t, dir, storageTitles, fastStorage)
	n = e.startSimNode("n1", storageTitles, simOpts{})
	e.startSimNode("n2", storageTitles, simOpts{})
	if info := e.nodeInfo("n1"); !info.Draining {
		t.Fatal("n1's drain forgotten by the restarted manager")
	}
	if info := e.nodeInfo("n2"); info.Weight != 40 {
		t.Fatalf("n2's weight %d after the restart, want 40", info.Weight)
	}
	n.waitCommand(t, "drain true", 1)
	e.m.mu.Lock()
	holds := e.m.rep.Holds(time.Now())
	e.m.mu.Unlock()
	if len(holds) != 1 || holds[0].Node != "n1" || holds[0].Title != "t1" {
		t.Fatalf("eviction holds after the restart: %v", holds)
	}
}
