package acm

import (
	"context"
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node registering with the standby (the managers share a store) is
// told the pins as stored, not those the standby loaded when it started:
// every registration tells the node its pins, none included, and the node
// protects exactly that set, so a standby started before the title was
// pinned told the node that none was, and its own eviction could remove
// the pinned title until the standby took over.
func TestStandbyTellsTheStoredPinsAtRegistration(t *testing.T) {
	ctx := context.Background()
	open, _ := sharedRedis(t)
	a := newManager(t, "", onShared(open(), nil, time.Minute))
	b := newManager(t, "", onShared(open(), nil, time.Minute)) // started before the pin
	if !a.m.Leader() || b.m.Leader() {
		t.Fatalf("leaders: a %v, b %v; want a alone", a.m.Leader(), b.m.Leader())
	}
	n := a.startNode("n1", nodeOpts{})
	if _, err := a.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2"}); err != nil {
		t.Fatal(err)
	}
	n.stop()

	// The node's manager address now leads to the standby.
	b.registerOnly("n1")
	rec := &cmdRecorder{}
	b.openStream("n1", rec)
	waitFor(t, 5*time.Second, "a protect command", func() bool {
		return slices.ContainsFunc(rec.list(), func(c *pb.NodeCommand) bool { return c.GetProtect() != nil })
	})
	got := rec.list()[slices.IndexFunc(rec.list(), func(c *pb.NodeCommand) bool { return c.GetProtect() != nil })]
	if want := []string{"t1", "t2"}; !slices.Equal(got.GetProtect().GetTitleIds(), want) {
		t.Fatalf("the standby told the registering node it protects %v, want the stored pins %v", got.GetProtect().GetTitleIds(), want)
	}
}
