package acm

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// The copy an operator's prefetch filled is kept on its node (for the
// storage section's evict_hold): the operator's next prefetch to the same
// full node makes its room with another title. The copy just filled,
// with no demand yet (that is why it was prefetched) and unplanned, was
// the evictor's first victim: the first prefetch undone by the second.
func TestOperatorPrefetchKeptForTheNext(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 3_000_000, held: []*pb.StoredTitle{stored("q"), stored("r")}})
	waitFor(t, 5*time.Second, "n1's report", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes["n1"]
		return ns != nil && ns.reported && ns.titles["r"] != nil
	})
	e.m.mu.Lock()
	for range 3 { // viewers asked for q and r: worth more than t1
		e.m.rep.Observe("q", e.m.now())
		e.m.rep.Observe("r", e.m.now())
	}
	e.m.mu.Unlock()
	prefetch := func(title string) string {
		t.Helper()
		ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
		if err != nil || !strings.HasPrefix(ack.GetMessage(), "prefetch ordered") {
			t.Fatalf("prefetch of %s: %v %v, want it ordered", title, ack, err)
		}
		return ack.GetMessage()
	}
	if msg := prefetch("t1"); !strings.Contains(msg, "once filled, kept there for 1h (vodctl evict removes it, vodctl pin keeps it for good)") {
		t.Fatalf("the prefetch's answer %q does not say the copy is kept", msg)
	}
	n1.complete("t1")
	waitFor(t, 5*time.Second, "t1's fill seen complete", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.rep.Kept("n1", "t1", e.m.now())
	})
	lp, err := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lp.GetReplicas() {
		if kept := r.GetKeptUntilUnixMs() > e.m.now().Add(59*time.Minute).UnixMilli(); kept != (r.GetTitleId() == "t1") {
			t.Fatalf("ListPlacement: %v kept until %d, want t1 alone kept, for 1h", r.GetTitleId(), r.GetKeptUntilUnixMs())
		}
	}
	prefetch("t2")
	n1.waitCommand(t, "prefetch t2", 1)
	cmds := n1.commands()
	if slices.Contains(cmds, "evict t1") || !slices.ContainsFunc(cmds, func(c string) bool { return c == "evict q" || c == "evict r" }) {
		t.Fatalf("n1 was sent %v: want q or r evicted for t2, not t1, which the operator's prefetch just filled", cmds)
	}
}

// TestOperatorPrefetchKeptOnTheNode: the node's own eviction keeps the
// copy too (its ProtectCommand lists it beside the pins) while the keep
// runs: the node, making room on its own for a fill the manager made no
// room for, took it first. The operator's eviction ends the keep there,
// and the first plan after evict_hold ends it too.
func TestOperatorPrefetchKeptOnTheNode(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 3_000_000})
	waitFor(t, 5*time.Second, "n1's report", func() bool { return e.nodeInfo("n1").Alive })
	ctx := context.Background()
	protecting := func(what string, want ...string) {
		t.Helper()
		waitFor(t, 5*time.Second, what, func() bool { return slices.Equal(n1.protecting(), want) })
	}
	for _, id := range []string{"t1", "t2"} {
		if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: id, NodeId: "n1"}); err != nil {
			t.Fatal(err)
		}
		n1.waitCommand(t, "prefetch "+id, 1)
		n1.complete(id)
	}
	protecting("t1 and t2 protected on n1 once filled", "t1", "t2")
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	protecting("t1 no longer protected once the operator evicted it", "t2")
	// A plan past evict_hold: t2's keep is over.
	e.m.plan(time.Now().Add(e.m.rep.Config().EvictHold + time.Minute))
	protecting("t2 no longer protected after evict_hold")
}
