package acm

import (
	"context"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// A fill its node retries through an outage of the origin is listed as
// "origin retry", with the node's failed transfers as its attempts, the
// node's next attempt and the last failure's cause; it was listed as
// filling with no attempt, nothing telling the operator the origin was
// away. A fill under way after the outage is filling again.
func TestFillsShowTheNodesOriginRetries(t *testing.T) {
	e := newManager(t, "", nil)
	next := time.Now().Add(2 * time.Second).UnixMilli()
	const cause = "rpc error: code = Unavailable desc = connection refused"
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, Filling: true, Sessions: 1, OriginRetries: 4, OriginRetryAtUnixMs: next, OriginError: cause},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 300_000, Filling: true, Sessions: 1},
	}})
	n.registrationProtect(t)
	fills, err := e.admin.ListFills(context.Background(), &pb.ListFillsRequest{})
	if err != nil || len(fills.Fills) != 2 {
		t.Fatalf("fills %v %v", fills, err)
	}
	if f := fills.Fills[0]; f.TitleId != "t1" || f.State != "origin retry" || f.Attempts != 4 || f.NextTryUnixMs != next || f.OriginError != cause {
		t.Errorf("a fill retried through an outage of the origin: %v", f)
	}
	if f := fills.Fills[1]; f.TitleId != "t2" || f.State != "filling" || f.Attempts != 0 || f.OriginError != "" {
		t.Errorf("a fill under way: %v", f)
	}
}
