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
