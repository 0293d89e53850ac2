package acm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// noOriginWording is what the front doors say of a title no node holds
// that none can fetch.
const noOriginWording = "no node holds the title and none can fetch it"

// httpGet asks the front door for title over HTTP as demo, and returns
// the answer's status, body and Retry-After.
func (e *env) httpGet(title string) (int, string, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/"+title+".ts", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth("demo", "demo")
	res, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, string(body), res.Header.Get("Retry-After")
}

// A node registered without an origin is recorded so (ListNodes
// no_origin, the planner's view) and, re-registered with one, no longer.
func TestRegistrationRecordsNoOrigin(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", noOrigin: true})
	e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002"})
	if !e.nodeInfo("bare").NoOrigin || e.nodeInfo("full").NoOrigin {
		t.Fatalf("no_origin: bare %v, full %v; want true, false", e.nodeInfo("bare").NoOrigin, e.nodeInfo("full").NoOrigin)
	}
	e.m.mu.Lock()
	view := e.m.viewLocked(nil)
	e.m.mu.Unlock()
	for _, v := range view.Nodes {
		if v.NoOrigin != (v.ID == "bare") {
			t.Errorf("planner view of %s: NoOrigin %v", v.ID, v.NoOrigin)
		}
	}
	if _, err := e.nc.Register(context.Background(), &pb.RegisterRequest{NodeId: "bare", RtspAddr: "127.0.0.1:7001",
		Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
	if e.nodeInfo("bare").NoOrigin {
		t.Fatal("re-registered with an origin, still listed without")
	}
}

// A viewer of a title the node without an origin lacks goes to the node
// with one, whatever its load; the titles it holds it still plays. With
// only it in service, a viewer of a title it lacks is refused, 453 over
// RTSP and 503 over HTTP with Retry-After, saying no node holds the title
// and none can fetch it: after the queue deadline while the nodes may
// still be registering, at once afterwards; never redirected to it (a
// 404 there).
func TestNoOriginNodeTakesOnlyItsTitles(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", egress: 100 * titleBps, noOrigin: true,
		titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002", egress: 10 * titleBps})
	redirectedTo := func(title, addr string) {
		t.Helper()
		res := e.describe("demo", "demo", title)
		if res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], addr) {
			t.Fatalf("%s: %d %q %v, want a redirect to %s", title, res.StatusCode, res.StatusMessage, res.Header["Location"], addr)
		}
	}
	for range 2 { // demo may have 8 sessions
		redirectedTo("t2", "127.0.0.1:7002")
		redirectedTo("t3", "127.0.0.1:7002")
	}
	redirectedTo("t1", "127.0.0.1:7001") // held there, and it is the idler node

	e.setNode(&pb.SetNodeRequest{NodeId: "full", Draining: ptr(true)})
	redirectedTo("t1", "127.0.0.1:7001")
	refused := func(when string, wait bool) {
		t.Helper()
		start := time.Now()
		res := e.describe("demo", "demo", "adult-1")
		if res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, noOriginWording) || len(res.Header["Retry-After"]) != 1 {
			t.Fatalf("RTSP %s: %d %q, Retry-After %v; want 453 saying %q", when, res.StatusCode, res.StatusMessage, res.Header["Retry-After"], noOriginWording)
		}
		if waited := time.Since(start); wait != (waited >= e.m.QueueDeadline) {
			t.Errorf("RTSP %s: refused after %v (queue deadline %v), want the wait %v", when, waited, e.m.QueueDeadline, wait)
		}
		code, body, retry := e.httpGet("t3")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, noOriginWording) || retry == "" {
			t.Fatalf("HTTP %s: %d %q, Retry-After %q; want 503 saying %q", when, code, body, retry, noOriginWording)
		}
	}
	refused("in the restore grace", true)
	e.settled()
	refused("settled", false)
	if q := e.queued(); q != 0 {
		t.Fatalf("%d requests left queued", q)
	}
	if n := e.nodeInfo("bare"); n.FillSessions != 0 {
		t.Fatalf("fills on the node without an origin: %+v", n)
	}
	// The node with an origin back: its viewers are placed again.
	e.setNode(&pb.SetNodeRequest{NodeId: "full", Draining: ptr(false)})
	redirectedTo("t2", "127.0.0.1:7002")
}

// A viewer waiting in the queue while the node with an origin is full is
// placed there when it frees, not on the idle node without an origin.
func TestQueuedViewerWaitsForTheNodeWithOrigin(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 10 * time.Second })
	e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", egress: 100 * titleBps, noOrigin: true})
	full := e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002", egress: titleBps})
	first := e.admitOne("t2")
	done := make(chan *base.Response, 1)
	go func() { done <- e.describe("demo", "demo", "t3") }()
	waitFor(t, 5*time.Second, "the second viewer queued", func() bool { return e.queued() == 1 })
	if err := full.event(first, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7002") {
			t.Fatalf("queued viewer: %d %q %v, want a redirect to the node with an origin", res.StatusCode, res.StatusMessage, res.Header["Location"])
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the queued viewer was not placed when the node with an origin freed")
	}
}

// The admin Prefetch naming a node without an origin is refused
// (FAILED_PRECONDITION, saying so), and one naming no node never picks
// it: the node with an origin lacking the title, or, with only the node
// without an origin in service, a refusal.
func TestPrefetchNeverOnANodeWithoutOrigin(t *testing.T) {
	e := newManager(t, "", nil)
	bare := e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", disk: 1 << 40, noOrigin: true})
	e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002", disk: 1 << 30})
	ctx := context.Background()
	_, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "bare"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no origin") {
		t.Fatalf("prefetch on the node without an origin: %v, want FailedPrecondition saying it has no origin", err)
	}
	ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3"})
	if err != nil || ack.NodeId != "full" {
		t.Fatalf("prefetch with no node named: %v %v, want on full", ack, err)
	}
	e.setNode(&pb.SetNodeRequest{NodeId: "full", Draining: ptr(true)})
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t2"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("prefetch with only the node without an origin in service: %v %v, want FailedPrecondition", ack, err)
	}
	// What the manager ordered shows at once in its views (the commands
	// below reach the node asynchronously: their absence alone proves
	// little).
	if n := e.nodeInfo("bare"); n.Titles != 0 {
		t.Fatalf("the node without an origin has %d titles in the manager's view, want none", n.Titles)
	}
	fills, err := e.admin.ListFills(ctx, &pb.ListFillsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fills.GetFills() {
		if f.GetNodeId() == "bare" {
			t.Fatalf("a fill listed on the node without an origin: %v", f)
		}
	}
	for {
		select {
		case cmd := <-bare.cmds:
			if cmd.GetPrefetch() != nil {
				t.Fatalf("a prefetch reached the node without an origin: %v", cmd)
			}
			continue
		default:
		}
		break
	}
}
