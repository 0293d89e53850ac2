package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// failedOn has the operator's prefetch of title on the simNode n (which
// fails prefetches) ordered, failed, and waiting for its retry.
func (e *env) failedOn(n *simNode, title string) {
	e.t.Helper()
	n.smu.Lock()
	n.failing = true
	n.smu.Unlock()
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: title, NodeId: n.id})
	if err != nil || !strings.HasPrefix(ack.GetMessage(), "prefetch ordered;") {
		e.t.Fatalf("prefetch of %s on %s: %v %v, want it ordered", title, n.id, ack, err)
	}
	waitFor(e.t, 10*time.Second, "the failed prefetch in backoff", func() bool {
		f := e.fill(n.id, title)
		return f != nil && f.State == "backoff" && f.Attempts == 1
	})
}

// A prefetch naming no node passes over the operator's prefetch of the
// title that failed on a node since out of service and waits for its
// retry, as it does one queued there: the retry comes once the node is
// back, a second copy, so the answer names the node, why, that the order
// there failed and waits for its retry, and how to cancel it. The answer
// said nothing of it.
func TestPrefetchPassedOverNamesAFailedOrderWaitingForItsRetry(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
	n2 := e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	e.failedOn(n1, "t1")
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
	msg := ack.GetMessage()
	if err != nil || ack.GetNodeId() != "n2" || !strings.HasPrefix(msg, "prefetch ordered") {
		t.Fatalf("prefetch of t1 naming no node, failed on n1 (drained since): %v %v, want it ordered on n2", ack, err)
	}
	if !strings.Contains(msg, `node "n1" is not in service: it is draining`) || !strings.Contains(msg, "failed 1 time and waits for its retry") ||
		!strings.Contains(msg, "to cancel: vodctl evict t1 n1)") {
		t.Errorf("answer %q: want n1 named, why, its failed order waiting for a retry, and the command that cancels it", msg)
	}
	n2.waitCommand(t, "prefetch t1", 1)
	if f := e.fill("n1", "t1"); f == nil || f.State != "backoff" {
		t.Fatalf("fill of t1 on n1 %+v, want it still waiting for its retry", f)
	}
	// The command named cancels it.
	if ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil || !strings.Contains(ack.GetMessage(), "cancelled") {
		t.Fatalf("vodctl evict t1 n1: %v %v, want the failed prefetch cancelled", ack, err)
	}
	if f := e.fill("n1", "t1"); f != nil {
		t.Fatalf("fill of t1 on n1 %+v after its cancel, want none", f)
	}
}

// A prefetch naming no node that passes over orders of the title on
// nodes out of service (queued on n1, drained; failed and waiting for its
// retry on n3, at weight 0) and is then refused (n2, the one node in
// service, holds the title: ALREADY_EXISTS) names those orders and the
// commands that cancel them, as the answer of one placed does: they stay,
// ordered there once the nodes are back. The refusal named none of them.
func TestPrefetchPassedOverRefusalNamesTheOrdersLeft(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{filling("p")}})
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000, held: []*pb.StoredTitle{stored("t1")}})
	n3 := e.startSimNode("n3", storageTitles, simOpts{disk: 5_000_000})
	e.queueOn("n1", "t1") // n1 fills p: at its fill limit
	e.failedOn(n3, "t1")
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.setNode(&pb.SetNodeRequest{NodeId: "n3", Weight: ptr(int32(0))})
	_, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1"})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `the cluster already has "t1": held on node "n2"`) {
		t.Fatalf("prefetch of t1 naming no node, held by n2, queued on n1 and failed on n3 out of service: %v, want AlreadyExists", err)
	}
	msg := status.Convert(err).Message()
	if !strings.Contains(msg, "to cancel: vodctl evict t1 n1, vodctl evict t1 n3)") {
		t.Errorf("refusal %q: want the commands that cancel the orders left on n1 and n3", msg)
	}
	i1, i3 := strings.Index(msg, `node "n1" is not in service: it is draining`), strings.Index(msg, `node "n3" is not in service: it has weight 0`)
	if i1 < 0 || i3 < i1 || !strings.Contains(msg[i3:], "failed 1 time and waits for its retry") {
		t.Errorf("refusal %q: want n1's and n3's reasons in that order, n3's order said failed and waiting for its retry", msg)
	}
	if f := e.fill("n1", "t1"); f == nil || f.State != "queued" {
		t.Fatalf("fill of t1 on n1 %+v, want it still queued", f)
	}
}
