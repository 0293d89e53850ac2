package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestEvictionOfADownNodeOutlivesARestart: the operator's eviction of a
// title on a node that is down waits for the node; a manager restarted
// meanwhile orders it at the node's registration (the queue that held it
// was lost with the manager, and the node came back with the title for
// good). Without a restart the queued command carries it out, once.
func TestEvictionOfADownNodeOutlivesARestart(t *testing.T) {
	ctx := context.Background()
	held := simOpts{held: []*pb.StoredTitle{stored("t1"), stored("t2")}}
	for _, restart := range []bool{true, false} {
		dir := t.TempDir()
		e := newManagerWith(t, dir, unhinted(), quietStorage)
		n := e.startSimNode("n1", storageTitles, held)
		n.leave()
		waitFor(t, 5*time.Second, "n1 down", func() bool { return !e.nodeInfo("n1").Alive })
		ack, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"})
		if err != nil || !strings.Contains(ack.GetMessage(), "node n1 is down: carried out when it is back") {
			t.Fatalf("evict on a down node: %v %v", ack, err)
		}
		if restart {
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			e = newManagerWith(t, dir, unhinted(), quietStorage)
		}
		back := e.startSimNode("n1", storageTitles, held)
		back.waitCommand(t, "evict t2", 1)
		reports := e.reports("n1")
		waitFor(t, 5*time.Second, "two more reports of n1", func() bool { return e.reports("n1") >= reports+2 })
		if got := back.count("evict t2"); got != 1 || back.has("t2") || !back.has("t1") {
			t.Fatalf("restart %v: n1 back got %v (holds t1 %v, t2 %v), want t2 evicted once, t1 kept", restart, back.commands(), back.has("t1"), back.has("t2"))
		}
		e.m.orderWrites.Wait() // the stored order's removal
		if orders, err := e.m.readEvictOrders(ctx, true); err != nil || len(orders) != 0 {
			t.Fatalf("restart %v: stored eviction orders %v (%v) once carried out, want none", restart, orders, err)
		}
	}
}
