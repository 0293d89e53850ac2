package acm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// A prefetch naming no node never chooses a node whose egress_bps is less
// than the title's bitrate, however empty its disk: the manager chose it
// and then refused the prefetch FAILED_PRECONDITION ("no viewer could
// play it there") while another node could stream the title. With the
// Replicator and without it. With no node able to stream it, the refusal
// says so.
func TestPrefetchWithNoNodeChoosesANodeThatCanStreamIt(t *testing.T) {
	t.Run("replicator", func(t *testing.T) {
		e := newManagerWith(t, "", unhinted(), quietStorage)
		e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, egress: titleBps / 2}) // the emptiest, too small
		e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{stored("r")}})
		ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
		if err != nil || ack.GetNodeId() != "n2" {
			t.Fatalf("prefetch of t1 naming no node, n1's egress half its bitrate: %v %v, want it ordered on n2", ack, err)
		}
	})
	t.Run("no replicator", func(t *testing.T) {
		e := newManager(t, "", func(m *Manager) { m.StoragePlanner = smm.PlannerNone })
		e.startNode("n1", nodeOpts{diskFree: 1 << 40, egress: titleBps / 2}) // the most free disk, too small
		e.startNode("n2", nodeOpts{diskFree: 1 << 30})
		ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
		if err != nil || ack.GetNodeId() != "n2" {
			t.Fatalf("prefetch of t1 naming no node, n1's egress half its bitrate: %v %v, want it ordered on n2", ack, err)
		}
	})
	t.Run("none can stream it", func(t *testing.T) {
		e := newManager(t, "", func(m *Manager) { m.StoragePlanner = smm.PlannerNone })
		e.startNode("n1", nodeOpts{egress: titleBps / 2})
		e.startNode("n2", nodeOpts{egress: titleBps / 3})
		_, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no node in service lacking") || !strings.Contains(err.Error(), "can stream") {
			t.Fatalf("prefetch of t1 naming no node, every node's egress below its bitrate: %v, want FailedPrecondition saying no node can stream it", err)
		}
	})
}

// The storage planner never prefetches a title on a node whose egress_bps
// is less than its bitrate: it ordered such fills (viewers asked for the
// title, every node at half its bitrate), which took disk and origin
// transfers for copies no viewer could play. The viewers' demand still
// counts (popularity), but the planner plans no replica of the title
// (none can stream it), so no order is refused and `vodctl fills` lists
// none in backoff.
func TestPlanPrefetchesNothingNoNodeCanStream(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline = 1
		m.PlanInterval, m.ShiftCheck = time.Hour, time.Hour
		m.Replicator.OffPeak = smm.Window{Start: 0, End: 24 * time.Hour}
		m.Replicator.MinExpected = 0.1 // two requests are enough to prefetch
	})
	for _, id := range []string{"n1", "n2"} {
		e.startNode(id, nodeOpts{egress: titleBps / 2})
	}
	for range 2 {
		req, err := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t1.ts", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth("demo", "demo")
		res, err := from("127.0.0.1").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("t1: %d, want 503 (no node can stream it)", res.StatusCode)
		}
	}
	e.m.plan(time.Now())
	if fs := e.fills(); len(fs) != 0 {
		t.Errorf("fills listed %v, want none", fs)
	}
	if s := e.storageStats(); s.GetFillsFailed() != 0 {
		t.Errorf("%d fills failed, want 0 (no order refused)", s.GetFillsFailed())
	}
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	for id, ns := range e.m.nodes {
		for title := range ns.pending {
			t.Errorf("prefetch of %s ordered on %s (egress_bps %d, below the bitrate %d)", title, id, titleBps/2, titleBps)
		}
	}
}
