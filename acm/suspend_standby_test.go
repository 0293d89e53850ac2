package acm

import (
	"context"
	"strings"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestStandbyKeepsTheActiveManagersSuspensions: two managers share one
// Redis. The operator suspends a subscriber on the active manager after
// the standby started; the standby lists it, and once a node registers
// with the standby (the front door's address moved to it, before it
// holds the planner lock) its front door refuses the subscriber (403)
// as the active one did. The standby used to list and apply only the
// suspensions of its own start. A lift on the active manager reaches the
// standby at the next registration too.
func TestStandbyKeepsTheActiveManagersSuspensions(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil)
	ctx := context.Background()
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 3600, Reason: "account shared"}); err != nil {
		t.Fatal(err)
	}
	list, err := b.admin.ListSuspensions(ctx, &pb.ListSuspensionsRequest{})
	if err != nil || len(list.GetSuspensions()) != 1 || list.GetSuspensions()[0].GetUser() != "demo" {
		t.Fatalf("the standby's list: %v %v; want demo", list, err)
	}
	n := b.registerWith("n1")
	if b.m.Leader() {
		t.Fatal("the standby took the lock while the active manager runs")
	}
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusForbidden {
		t.Fatalf("DESCRIBE of the suspended subscriber on the standby: %d %s, want 403", res.StatusCode, res.StatusMessage)
	}
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo"}); err != nil {
		t.Fatal(err)
	}
	n.stop()
	b.registerWith("n1")
	if res := b.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE after the lift on the active manager: %d %s, want 302", res.StatusCode, res.StatusMessage)
	}
}

// The standby's lists say so (ListSessionsResponse.standby and the same in
// ListNodes, ListFills, ListPlacement and GetPolicy): `vodctl sessions`
// against it printed an empty table with nothing to tell it from a
// cluster without a viewer, `vodctl placement` no copy anywhere, `vodctl
// policy` a storage planner that never planned. The active manager's do
// not. A node filter naming a node registered with the active manager
// only is NOT_FOUND on the standby, which says to ask the active manager.
func TestStandbyListsSaySo(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil)
	ctx := context.Background()
	a.registerWith("n1")
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"ListSessions", func() error {
			_, err := b.admin.ListSessions(ctx, &pb.ListSessionsRequest{NodeId: "n1"})
			return err
		}},
		{"ListPlacement", func() error {
			_, err := b.admin.ListPlacement(ctx, &pb.ListPlacementRequest{NodeId: "n1"})
			return err
		}},
	} {
		if err := c.call(); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "ask the active manager") {
			t.Errorf("standby: %s of node n1 (registered with the active manager): %v; want NOT_FOUND saying to ask the active manager", c.name, err)
		}
	}
	if _, err := a.admin.ListPlacement(ctx, &pb.ListPlacementRequest{NodeId: "n9"}); status.Code(err) != codes.NotFound || strings.Contains(err.Error(), "active manager") {
		t.Errorf("active: ListPlacement of an unknown node: %v; want NOT_FOUND without a word of a standby", err)
	}
	for _, c := range []struct {
		name    string
		e       *env
		standby bool
	}{{"active", a, false}, {"standby", b, true}} {
		ss, err := c.e.admin.ListSessions(ctx, &pb.ListSessionsRequest{})
		if err != nil || ss.GetStandby() != c.standby {
			t.Errorf("%s: ListSessions standby %v (%v), want %v", c.name, ss.GetStandby(), err, c.standby)
		}
		ns, err := c.e.admin.ListNodes(ctx, &pb.ListNodesRequest{})
		if err != nil || ns.GetStandby() != c.standby {
			t.Errorf("%s: ListNodes standby %v (%v), want %v", c.name, ns.GetStandby(), err, c.standby)
		}
		fs, err := c.e.admin.ListFills(ctx, &pb.ListFillsRequest{})
		if err != nil || fs.GetStandby() != c.standby {
			t.Errorf("%s: ListFills standby %v (%v), want %v", c.name, fs.GetStandby(), err, c.standby)
		}
		ps, err := c.e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{})
		if err != nil || ps.GetStandby() != c.standby {
			t.Errorf("%s: ListPlacement standby %v (%v), want %v", c.name, ps.GetStandby(), err, c.standby)
		}
		pi, err := c.e.admin.GetPolicy(ctx, &pb.GetPolicyRequest{})
		if err != nil || pi.GetStandby() != c.standby {
			t.Errorf("%s: GetPolicy standby %v (%v), want %v", c.name, pi.GetStandby(), err, c.standby)
		}
	}
}
