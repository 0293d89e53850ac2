package acm

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// An operator's prefetch queued for a node that had no heartbeat stream
// (registered, then away before its stream opened) is not sent when the
// node registers again without an origin: it would only fail it. It is
// given up as a stored order for such a node is: out of the node's
// command queue and the manager's view, not listed as a fill, its stored
// order removed, and a warning logged. A prefetch of a title the node
// comes back holding is dropped from the queue but counted done.
func TestQueuedPrefetchDroppedWhenTheNodeComesBackWithoutOrigin(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	ctx := context.Background()
	reg := func(noOrigin bool, titles ...*pb.StoredTitle) {
		t.Helper()
		if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001", NoOrigin: noOrigin, Titles: titles,
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	queuedPrefetches := func() []string {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		var out []string
		for _, c := range e.m.nodes["n"].queue {
			if p := c.GetPrefetch(); p != nil {
				out = append(out, p.GetTitleId())
			}
		}
		return out
	}
	reg(false) // no heartbeat stream: its commands wait in the queue
	for _, title := range []string{"t3", "t2"} {
		if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n"}); err != nil || strings.Contains(ack.GetMessage(), "queued") {
			t.Fatalf("prefetch of %s: %v %v, want it ordered", title, ack, err)
		}
	}
	if q := queuedPrefetches(); len(q) != 2 {
		t.Fatalf("prefetches queued for n: %v, want t3 and t2", q)
	}
	waitFor(t, 5*time.Second, "the orders stored", func() bool { return len(storedOrders(t, e)) == 2 })

	reg(true, &pb.StoredTitle{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000})
	if q := queuedPrefetches(); len(q) != 0 {
		t.Fatalf("prefetches still queued for the node without an origin: %v", q)
	}
	e.m.mu.Lock()
	pending := len(e.m.nodes["n"].pending)
	e.m.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d prefetches still pending on the node without an origin", pending)
	}
	if n := e.nodeInfo("n"); n.Titles != 1 {
		t.Fatalf("the node without an origin has %d titles in the manager's view, want only t2, which it holds", n.Titles)
	}
	for _, f := range e.fills() {
		if f.GetNodeId() == "n" {
			t.Fatalf("a fill listed on the node without an origin: %v", f)
		}
	}
	waitFor(t, 5*time.Second, "the orders gone from the store", func() bool { return len(storedOrders(t, e)) == 0 })
	if !strings.Contains(log.String(), "prefetch dropped") || !strings.Contains(log.String(), "title=t3") {
		t.Errorf("no warning of the dropped prefetch of t3:\n%s", log.String())
	}
	if strings.Contains(log.String(), "prefetch failed") {
		t.Errorf("a prefetch counted failed by the node:\n%s", log.String())
	}
}

// The evictions queued for a node while it was away are not sent when it
// registers again without an origin, but for the operator's: the room
// they made was for fills it cannot make, and it could never fetch the
// titles back. The node's copy stays in the manager's view, and each
// eviction carries its reason to the node.
func TestQueuedEvictionsDroppedWhenTheNodeComesBackWithoutOrigin(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	ctx := context.Background()
	held := []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}
	reg := func(noOrigin bool) {
		t.Helper()
		if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001", NoOrigin: noOrigin, Titles: held,
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	queuedEvicts := func() map[string]string {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		out := map[string]string{}
		for _, c := range e.m.nodes["n"].queue {
			if ev := c.GetEvict(); ev != nil {
				out[ev.GetTitleId()] = ev.GetReason()
			}
		}
		return out
	}
	reg(false) // no heartbeat stream: its commands wait in the queue
	e.m.mu.Lock()
	if !e.m.orderEvictLocked(e.m.nodes["n"], "t1", false, evictRoom) { // room for a fill, as reclaimLocked orders
		t.Fatal("eviction not queued")
	}
	e.m.mu.Unlock()
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n"}); err != nil {
		t.Fatal(err)
	}
	if q := queuedEvicts(); len(q) != 2 || q["t1"] != evictRoom || q["t2"] != evictOperator {
		t.Fatalf("evictions queued: %v, want t1 for room and t2 by the operator", q)
	}

	reg(true)
	if q := queuedEvicts(); len(q) != 1 || q["t2"] != evictOperator {
		t.Fatalf("evictions queued for the node back without an origin: %v, want the operator's of t2 alone", q)
	}
	e.m.mu.Lock()
	_, inView := e.m.nodes["n"].titles["t1"]
	e.m.mu.Unlock()
	if !inView {
		t.Fatal("t1, whose eviction was dropped, is not in the manager's view of the node")
	}
	if !strings.Contains(log.String(), "eviction dropped") || !strings.Contains(log.String(), "title=t1") {
		t.Errorf("no warning of the dropped eviction of t1:\n%s", log.String())
	}
}

// blockedStream is a node's heartbeat stream whose Send, once it has
// taken a command, waits until the stream's context ends (a node that
// stopped reading: its connection's window full), then fails.
type blockedStream struct {
	grpc.ServerStream
	ctx     context.Context
	sending chan *pb.NodeCommand // the command Send took, once
}

func (b *blockedStream) Recv() (*pb.LoadReport, error) { return nil, io.EOF }

func (b *blockedStream) Send(c *pb.NodeCommand) error {
	select {
	case b.sending <- c:
	default:
	}
	<-b.ctx.Done()
	return b.ctx.Err()
}

// The commands the stream's sender had taken from the queue when the node
// registered again without an origin (its old stream's Send blocked:
// a node that stopped reading, restarted) are not put back in the queue
// for the new stream, but for the operator's evictions: the prefetch and
// the eviction for room were dropped by the registration, and would
// otherwise reach the node from its new stream.
func TestCommandsInFlightDroppedWhenTheNodeComesBackWithoutOrigin(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	held := []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}
	reg := func(noOrigin bool) {
		t.Helper()
		if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001", NoOrigin: noOrigin, Titles: held,
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	reg(false) // no heartbeat stream yet: its commands wait in the queue
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil || strings.Contains(ack.GetMessage(), "queued") {
		t.Fatalf("prefetch of t3: %v %v, want it ordered", ack, err)
	}
	e.m.mu.Lock()
	ns := e.m.nodes["n"]
	if !e.m.orderEvictLocked(ns, "t1", false, evictRoom) {
		t.Fatal("eviction not queued")
	}
	e.m.mu.Unlock()
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n"}); err != nil {
		t.Fatal(err)
	}

	// A stream opens; its sender takes the registration's protect command
	// (no pin) and the three commands, and blocks on the first.
	e.m.mu.Lock()
	sctx, cancel := context.WithCancel(ctx)
	ns.streamGen++
	gen := ns.streamGen
	ns.streamCancel = cancel
	e.m.mu.Unlock()
	st := &blockedStream{ctx: sctx, sending: make(chan *pb.NodeCommand, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.m.sendCommands(sctx, st, ns, gen)
	}()
	ns.signal()
	select {
	case c := <-st.sending:
		if p := c.GetProtect(); p == nil || len(p.GetTitleIds()) != 0 {
			t.Fatalf("first command sent: %v, want the registration's protect command of no title", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sender took no command")
	}
	e.m.mu.Lock()
	taken := len(ns.queue) == 0
	e.m.mu.Unlock()
	if !taken {
		t.Fatal("the sender left commands in the queue")
	}

	reg(true) // ends the old stream: its sender puts back what it could not send
	e.senderEnded(done)
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	var queued []string
	for _, c := range ns.queue {
		switch {
		case c.GetPrefetch() != nil:
			queued = append(queued, "prefetch "+c.GetPrefetch().GetTitleId())
		case c.GetEvict() != nil:
			queued = append(queued, "evict "+c.GetEvict().GetTitleId()+" "+c.GetEvict().GetReason())
		}
	}
	if !slices.Equal(queued, []string{"evict t2 operator"}) {
		t.Fatalf("prefetches and evictions queued for the node's new stream: %v, want the operator's eviction of t2 alone", queued)
	}
	if _, ok := ns.evicting["t1"]; ok {
		t.Error("t1, whose eviction was dropped, still counted as being evicted")
	}
}

// An operator's prefetch its node was filling (its reports showed it)
// when the node went away is given up as one still queued when the node
// registers again without an origin and without the title: its stored
// order removed, not listed as a fill, "prefetch dropped" logged. It was
// counted a failed fill ("prefetch failed: retried after backoff ... the
// operator ordered it", where it can never be retried) and its stored
// order kept, to be ordered again after a manager restart.
func TestPrefetchInProgressDroppedWhenTheNodeComesBackWithoutOrigin(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	ctx := context.Background()
	held := []*pb.StoredTitle{{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}
	n := e.startNode("n", nodeOpts{titles: held})
	n.registrationProtect(t)
	if ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil || strings.Contains(ack.GetMessage(), "queued") {
		t.Fatalf("prefetch of t3: %v %v, want it ordered", ack, err)
	}
	select {
	case c := <-n.cmds:
		if c.GetPrefetch().GetTitleId() != "t3" {
			t.Fatalf("command %v, want the prefetch of t3", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no prefetch sent")
	}
	n.mu.Lock()
	n.titles = append(slices.Clone(held), &pb.StoredTitle{TitleId: "t3", SizeBytes: 1_500_000, StoredBytes: 1000, Filling: true, Prefetch: true})
	n.mu.Unlock()
	waitFor(t, 5*time.Second, "the fill in the node's reports", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes["n"]
		return ns.filling["t3"] && ns.pending["t3"] == nil
	})
	waitFor(t, 5*time.Second, "the order stored", func() bool { return len(storedOrders(t, e)) == 1 })

	n.stop()
	e.startNode("n", nodeOpts{titles: held, noOrigin: true}) // its partial of t3 lost with the restart
	waitFor(t, 5*time.Second, "the order gone from the store", func() bool { return len(storedOrders(t, e)) == 0 })
	for _, f := range e.fills() {
		if f.GetNodeId() == "n" {
			t.Fatalf("a fill listed on the node without an origin: %v", f)
		}
	}
	if !strings.Contains(log.String(), "prefetch dropped") || !strings.Contains(log.String(), "title=t3") {
		t.Errorf("no warning of the dropped prefetch of t3:\n%s", log.String())
	}
	if strings.Contains(log.String(), "prefetch failed") {
		t.Errorf("the prefetch counted failed, to be retried:\n%s", log.String())
	}
}
