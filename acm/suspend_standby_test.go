package acm

import (
	"context"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

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
// ListNodes and ListFills): `vodctl sessions` against it printed an empty
// table with nothing to tell it from a cluster without a viewer. The
// active manager's do not.
func TestStandbyListsSaySo(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil)
	ctx := context.Background()
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
	}
}
