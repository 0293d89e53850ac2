package acm

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
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
	a, b := activeAndStandby(t, open, testTitles, nil) // b started before the pin
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

// A pin change asked of the standby is refused, naming the active manager:
// the pins are stored as one list, and the standby's is the one it loaded
// at its start or a node's registration since, so its write undid the
// active manager's pins made meanwhile.
func TestStandbyRefusesPinChanges(t *testing.T) {
	ctx := context.Background()
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil) // b started before the pin
	if _, err := a.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1"}); err != nil {
		t.Fatal(err)
	}
	_, pinErr := b.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2"})
	_, unpinErr := b.admin.Unpin(ctx, &pb.PlacementRequest{TitleId: "t1"})

	raw, err := open().State(ctx, statePins)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := smm.NewPins()
	if err != nil {
		t.Fatal(err)
	}
	if err := stored.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	if !stored.Pinned("", "t1") || stored.Pinned("", "t2") {
		t.Fatalf("stored pins after the standby's pin and unpin: %v; want the active manager's t1 alone", stored.List())
	}
	for what, err := range map[string]error{"pin": pinErr, "unpin": unpinErr} {
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "on the active manager") {
			t.Errorf("the standby's %s: %v; want FAILED_PRECONDITION saying to %s on the active manager", what, err, what)
		}
	}
}
