package acm

import (
	"context"
	"maps"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "vodcluster/proto/vodcluster/v1"
)

// setPartials makes the node report ps from its next report on.
func (n *fakeNode) setPartials(ps ...*pb.PartialTitle) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.partials = ps
}

// nextReport waits (at most waitForMin) for the manager to apply node id's next
// load report.
func (e *env) nextReport(id string) {
	e.t.Helper()
	e.m.mu.Lock()
	seen := e.m.nodes[id].reportWaiter()
	e.m.mu.Unlock()
	select {
	case <-seen:
	case <-time.After(waitForMin):
		e.t.Fatalf("no load report of %s within %v", id, waitForMin)
	}
}

// TestPlacementPrefersANodeWithAPartial: a viewer of a title no node holds
// goes to the node that keeps a partial of it (a fill cut short there),
// though the other node is the cheaper home for a fill of a title nobody
// has begun; a partial whose size is not the catalog's (the title was
// replaced at the origin) gives no such preference.
func TestPlacementPrefersANodeWithAPartial(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 20 * titleBps})
	n2 := e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", egress: 10 * titleBps})
	n2.setPartials(
		&pb.PartialTitle{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_200_000, Version: "v1"},
		&pb.PartialTitle{TitleId: "t3", SizeBytes: 999_000, StoredBytes: 900_000, Version: "v0"},
	)
	e.nextReport("n2")
	e.nextReport("n2") // the one in flight when the partials were set may lack them

	// Without a partial the larger node takes the fill.
	e.tokenOf(e.describe("demo", "demo", "t2").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t2", "")
	// With four fifths of t1 on n2, n2 takes it.
	e.tokenOf(e.describe("demo", "demo", "t1").Header["Location"][0], "rtsp", "127.0.0.1:7002", "t1", "")
	// n2's partial of t3 is of another size than the catalog's: no use.
	e.tokenOf(e.describe("demo", "demo", "t3").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t3", "")

	// The storage planner sees the partial of the catalog's size too.
	e.m.mu.Lock()
	v := e.m.viewLocked(nil)
	e.m.mu.Unlock()
	for _, n := range v.Nodes {
		want := map[string]int64(nil)
		if n.ID == "n2" {
			want = map[string]int64{"t1": 1_200_000}
		}
		if !maps.Equal(n.Partials, want) {
			t.Errorf("planner's view of %s's partials: %v, want %v", n.ID, n.Partials, want)
		}
	}
}

// TestRegisterRefusesAMalformedPartial: a registration whose partial has
// no title or more bytes than its title is INVALID_ARGUMENT.
func TestRegisterRefusesAMalformedPartial(t *testing.T) {
	e := newManager(t, "", nil)
	for _, p := range []*pb.PartialTitle{
		{SizeBytes: 10, StoredBytes: 5},
		{TitleId: "t1", SizeBytes: 10, StoredBytes: 11},
		{TitleId: "t1", SizeBytes: 10, StoredBytes: 0},
	} {
		req := regReq("n1", "127.0.0.1:7001", "127.0.0.1:8001", 10*titleBps)
		req.Partials = []*pb.PartialTitle{p}
		if _, err := e.nc.Register(context.Background(), req); grpcCode(err) != codes.InvalidArgument {
			t.Fatalf("Register with partial %v: %v, want INVALID_ARGUMENT", p, err)
		}
	}
}

// TestFillsShowThePartialOfAFillInBackoff: a prefetch that failed, whose
// bytes so far the node keeps as a partial, is listed in backoff with the
// partial's bytes: what its retry resumes from.
func TestFillsShowThePartialOfAFillInBackoff(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Hour, time.Hour
	})
	n := e.startSimNode("n1", storageTitles, simOpts{before: func(n *simNode) { n.failing = true }})
	n.waitCommand(t, "prefetch hot", 1)
	waitFor(t, 5*time.Second, "the failed prefetch in backoff", func() bool {
		f := e.fill("n1", "hot")
		return f != nil && f.State == "backoff"
	})
	if f := e.fill("n1", "hot"); f.StoredBytes != 0 {
		t.Fatalf("backoff without a partial: %d bytes stored", f.StoredBytes)
	}
	n.setPartials(&pb.PartialTitle{TitleId: "hot", SizeBytes: 1_000_000, StoredBytes: 250_000, Version: "v1"})
	waitFor(t, 5*time.Second, "the partial's bytes in the fill list", func() bool {
		f := e.fill("n1", "hot")
		return f != nil && f.State == "backoff" && f.StoredBytes == 250_000 && f.SizeBytes == 1_000_000
	})
}

// A partial of another version of its title than the catalog's, of the
// same size (the title's file replaced by other bytes), is stale: no head
// start for the title's next viewer, and listed so; a partial of the
// catalog's version draws its viewer.
func TestPartialOfAnotherVersionIsStale(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v2"), nil)
	e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 20 * titleBps})
	n2 := e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", egress: 10 * titleBps})
	n2.setPartials(
		&pb.PartialTitle{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_200_000, Version: "v1"},
		&pb.PartialTitle{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_200_000, Version: "v2"},
	)
	e.nextReport("n2")
	e.nextReport("n2")
	e.tokenOf(e.describe("demo", "demo", "t2").Header["Location"][0], "rtsp", "127.0.0.1:7002", "t2", "")
	e.tokenOf(e.describe("demo", "demo", "t1").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t1", "")
	for _, p := range e.placement("n2").GetPartials() {
		if want := p.GetTitleId() == "t1"; p.GetStale() != want {
			t.Errorf("partial of %s listed stale %v, want %v", p.GetTitleId(), p.GetStale(), want)
		}
	}
}
