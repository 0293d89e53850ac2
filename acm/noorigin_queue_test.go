package acm

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// A request waiting for the full node with an origin is refused as soon
// as the operator drains that node, when the node left in service has no
// origin and lacks the title: 453 saying no node holds the title and none
// can fetch it, not after the queue deadline (the drain leaves a node in
// service, so it needs no operator in NeedsOperator's sense).
func TestDrainOfTheLastFillerRefusesTheWaitingAtOnce(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 20 * time.Second })
	e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", egress: 100 * titleBps, noOrigin: true})
	e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002", egress: titleBps})
	e.admitOne("t1")
	e.settled()
	got := make(chan *base.Response, 1)
	start := time.Now()
	go func() { got <- e.describe("demo", "demo", "t2") }()
	waitFor(t, 5*time.Second, "the request to queue for the full node", func() bool { return e.queued() == 1 })
	e.setNode(&pb.SetNodeRequest{NodeId: "full", Draining: ptr(true)})
	select {
	case res := <-got:
		if res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, noOriginWording) || len(res.Header["Retry-After"]) != 1 {
			t.Fatalf("waiting request after the drain: %d %q, Retry-After %v", res.StatusCode, res.StatusMessage, res.Header["Retry-After"])
		}
		if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
			t.Fatalf("refused after %v: waited for the queue deadline", waited)
		}
	case <-time.After(e.m.QueueDeadline / 2):
		t.Fatal("the waiting request still waits after the drain of the last node that could fill the title")
	}
	if e.queued() != 0 || e.reserved("bare") != 0 {
		t.Fatalf("queued %d, reserved on bare %d", e.queued(), e.reserved("bare"))
	}
}

// A request that came while the nodes were settling (only a node without
// an origin, lacking the title, registered) waits for a node with an
// origin; once the nodes settled with none, it is refused at the next
// pump rather than at its queue deadline.
func TestQueuedWhileSettlingRefusedOnceSettled(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 20 * time.Second })
	e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", noOrigin: true})
	got := make(chan *base.Response, 1)
	start := time.Now()
	go func() { got <- e.describe("demo", "demo", "t2") }()
	waitFor(t, 5*time.Second, "the request to queue while the nodes settle", func() bool { return e.queued() == 1 })
	e.settled()
	e.m.kickPump() // as a heartbeat does
	select {
	case res := <-got:
		if res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, noOriginWording) {
			t.Fatalf("waiting request once settled: %d %q", res.StatusCode, res.StatusMessage)
		}
		if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
			t.Fatalf("refused after %v: waited for the queue deadline", waited)
		}
	case <-time.After(e.m.QueueDeadline / 2):
		t.Fatal("the waiting request still waits once the nodes settled without a node that could fill the title")
	}
}

// An operator's prefetch stored by a manager, whose node comes back to
// the restarted manager without an origin, is dropped from the store and
// never ordered there (it was queued again, listed for ever, and ordered
// again at each restart).
func TestStoredPrefetchDroppedAtANodeWithoutOrigin(t *testing.T) {
	dir := t.TempDir()
	conf := func(m *Manager) {
		fastStorage(m)
		m.Replicator.MaxFillsPerNode = 1
	}
	e := newManagerWith(t, dir, storageTitles, conf)
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	n.waitCommand(t, "prefetch hot", 1)
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "queued") {
		t.Fatalf("prefetch: %v %v, want it queued", ack, err)
	}
	if o := storedOrders(t, e); len(o) != 1 {
		t.Fatalf("stored orders %+v, want t1 on n1", o)
	}
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newManagerWith(t, dir, storageTitles, conf)
	n2 := e2.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000, noOrigin: true})
	waitFor(t, 5*time.Second, "the order gone from the store", func() bool { return len(storedOrders(t, e2)) == 0 })
	fills, err := e2.admin.ListFills(context.Background(), &pb.ListFillsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fills.GetFills() {
		if f.GetNodeId() == "n1" {
			t.Fatalf("fill listed on the node without an origin: %v", f)
		}
	}
	for _, c := range n2.commands() {
		if strings.HasPrefix(c, "prefetch") {
			t.Fatalf("commands %v: a prefetch reached the node without an origin", n2.commands())
		}
	}
}

// A pin to a node without an origin says that the title is never fetched
// there (the answer said only "pinned", while the storage planner never
// places it there).
func TestPinToANodeWithoutOriginSaysSo(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", noOrigin: true})
	e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002"})
	ack, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "t3", NodeId: "bare"})
	if err != nil || !strings.Contains(ack.GetMessage(), "no origin") {
		t.Fatalf("pin to bare: %v %v, want a message saying it has no origin", ack, err)
	}
	ack, err = e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "t3", NodeId: "full"})
	if err != nil || strings.Contains(ack.GetMessage(), "no origin") || !ack.GetFetching() {
		t.Fatalf("pin to full: %v %v, want it fetched there", ack, err)
	}
}

// The log of a viewer refused because the only node in service has no
// origin names the drained node with an origin that would take it, and
// how to put it back (it said only that the nodes have no origin, as if
// none had one).
func TestNoSourceRefusalNamesTheDrainedFiller(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", noOrigin: true})
	e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002"})
	e.setNode(&pb.SetNodeRequest{NodeId: "full", Draining: ptr(true)})
	e.settled()
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, noOriginWording) {
		t.Fatalf("full drained: %d %q", res.StatusCode, res.StatusMessage)
	}
	for _, want := range []string{"bare", "full (drained)", "--undrain"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

// A stale copy on a node without an origin (the title replaced at the
// origin since the copy was made) is kept: that node can never fetch the
// new version. The same stale copy, idle, on a node with an origin is
// evicted (it was evicted from both, for nothing on the node without
// one).
func TestStaleCopyKeptOnANodeWithoutOrigin(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v2"), nil)
	stale := func() []*pb.StoredTitle {
		return []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v1"}}
	}
	bare := e.startNode("bare", nodeOpts{rtsp: "127.0.0.1:7001", titles: stale(), noOrigin: true})
	full := e.startNode("full", nodeOpts{rtsp: "127.0.0.1:7002", titles: stale()})
	waitFor(t, 5*time.Second, "the eviction of the stale copy on the node with an origin", func() bool {
		full.mu.Lock()
		defer full.mu.Unlock()
		return slices.Contains(full.evictions(), "t1")
	})
	e.nextReport("bare")
	e.nextReport("bare")
	bare.mu.Lock()
	ev := bare.evictions()
	bare.mu.Unlock()
	if len(ev) != 0 {
		t.Fatalf("evictions on the node without an origin: %v", ev)
	}
	if n := e.nodeInfo("bare"); n.Titles != 1 {
		t.Fatalf("the node without an origin has %d titles in the manager's view, want its stale copy", n.Titles)
	}
}
