package acm

import (
	"context"
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// registerAgain registers n again as it was (its titles and partials now)
// and opens its new heartbeat stream, its old one broken: a node back
// within the dead-node window.
func (e *env) registerAgain(n *simNode) {
	e.t.Helper()
	e.registerAgainEgress(n, 10*titleBps)
}

// registerAgainEgress is registerAgain with egress (bit/s) as the node's
// egress_bps.
func (e *env) registerAgainEgress(n *simNode, egress int64) {
	e.t.Helper()
	e.registerWithoutStream(n, egress)
	r := e.reports(n.id)
	n.heartbeat()
	waitFor(e.t, 5*time.Second, n.id+"'s report after it registered again", func() bool { return e.reports(n.id) > r })
}

// registerWithoutStream breaks n's heartbeat stream and registers n
// again with its titles and partials and egress (bit/s) as its
// egress_bps, its new stream not open yet: commands for it queue at the
// manager until n.heartbeat().
func (e *env) registerWithoutStream(n *simNode, egress int64) {
	e.t.Helper()
	n.stop()
	n.mu.Lock()
	req := &pb.RegisterRequest{NodeId: n.id, RtspAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2", Titles: n.titles, Partials: n.partials,
		Capacity: &pb.NodeCapacity{EgressBps: egress, DiskBytes: n.disk}}
	n.mu.Unlock()
	if _, err := e.nc.Register(context.Background(), req); err != nil {
		e.t.Fatal(err)
	}
}

// A prefetch whose command was lost with the node's heartbeat stream (the
// node never started it) is sent again as soon as the node registers
// again without it, still ordered, not failed: it showed ordered for the
// 30 s order timeout and then failed as "not started", to be retried
// after a backoff.
func TestPrefetchLostWithTheStreamSentAgainAtRegistration(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	n := e.startSimNode("n1", testTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1) // lost: the node does not act on it
	e.registerAgain(n)
	n.waitCommand(t, "prefetch t1", 2)
	if f := e.fill("n1", "t1"); f == nil || f.State != "ordered" {
		t.Fatalf("fill %v after the registration, want ordered", f)
	}
	if s := e.storageStats(); s.FillsFailed != 0 {
		t.Fatalf("%d fills failed, want none", s.FillsFailed)
	}
	e.registerAgain(n) // the order is sent once per registration that lacks it
	n.waitCommand(t, "prefetch t1", 3)
	if k := n.count("prefetch t1"); k != 3 {
		t.Fatalf("t1 ordered %d times, want 3", k)
	}
}

// At a node's registration its pins (ProtectCommand) go before the
// prefetches sent again and those queued while it was away: a restarted
// node making room for such a fill must already know which titles it may
// not evict (they came after the prefetch).
func TestProtectBeforeThePrefetchesAtRegistration(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	n := e.startSimNode("n1", testTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1) // lost: the node does not act on it
	n.smu.Lock()
	before := len(n.protects)
	n.smu.Unlock()
	e.registerAgain(n)
	n.waitCommand(t, "prefetch t1", 2)
	waitFor(t, 5*time.Second, "the protect command after the registration", func() bool {
		n.smu.Lock()
		defer n.smu.Unlock()
		return len(n.protects) > before
	})
	n.smu.Lock()
	at, log := n.protects[before], slices.Clone(n.log)
	n.smu.Unlock()
	again := slices.Index(log, "prefetch t1") + 1 // the first one's sending again, at this index or after
	again += slices.Index(log[again:], "prefetch t1")
	if at > again {
		t.Fatalf("commands %v, the protect command at %d: after the prefetch sent again (at %d)", log, at, again)
	}
}

// A prefetch the node started and whose fill stopped with it (it
// registers again keeping a partial written since the order) fails at
// once, to be retried from the partial after its backoff, instead of
// showing ordered until the order timeout and failing as "not started".
func TestPrefetchStoppedWithTheNodeFailsAtRegistration(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	n := e.startSimNode("n1", testTitles, simOpts{})
	n.mute(true) // no report shows the fill before the node stops
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1)
	n.drop("t1")
	n.setPartials(&pb.PartialTitle{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 400_000, SinceUnixMs: time.Now().UnixMilli()})
	n.mute(false)
	e.registerAgain(n)
	f := e.fill("n1", "t1")
	if f == nil || f.State != "backoff" || f.Attempts != 1 || f.StoredBytes != 400_000 {
		t.Fatalf("fill %v after the registration, want in backoff after 1 attempt, 400000 bytes kept", f)
	}
	if k := n.count("prefetch t1"); k != 1 {
		t.Fatalf("t1 ordered %d times, want once (retried after its backoff)", k)
	}
}

// A partial the node kept from before the order, unchanged since, is no
// sign that the node started the prefetch, whatever its stop time says on
// the node's clock (here a minute ahead of the manager's): the prefetch
// lost with the stream is sent again, not failed as "stopped with the
// node".
func TestPrefetchResentWhenPartialUnchangedDespiteNodeClockAhead(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	n := e.startSimNode("n1", testTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	ahead := time.Now().Add(time.Minute).UnixMilli() // stopped just now, on a clock a minute ahead
	n.setPartials(&pb.PartialTitle{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 400_000, SinceUnixMs: ahead})
	e.nextReport("n1")
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1) // lost: the node does not act on it
	e.registerAgain(n)
	n.waitCommand(t, "prefetch t1", 2)
	if f := e.fill("n1", "t1"); f == nil || f.State != "ordered" {
		t.Fatalf("fill %v after the registration, want ordered (sent again)", f)
	}
	if s := e.storageStats(); s.FillsFailed != 0 {
		t.Fatalf("%d fills failed, want none", s.FillsFailed)
	}
}

// A prefetch past its order timeout when the node registers again (it was
// away longer) is not sent again with a fresh timeout: it fails as not
// started, as it would have at the node's next report, and is retried
// after its backoff only if still wanted.
func TestPrefetchPastItsOrderTimeoutNotResentAtRegistration(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	n := e.startSimNode("n1", testTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1)
	n.mute(true) // away: no report fails the order meanwhile
	e.m.mu.Lock()
	e.m.nodes["n1"].pending["t1"].at = time.Now().Add(-2 * time.Minute) // ordered two timeouts ago
	e.m.mu.Unlock()
	n.mute(false)
	e.registerAgain(n)
	if k := n.count("prefetch t1"); k != 1 {
		t.Fatalf("t1 ordered %d times, want once (its order had timed out)", k)
	}
	if s := e.storageStats(); s.FillsFailed != 1 {
		t.Fatalf("%d fills failed, want 1 (not started within the order timeout)", s.FillsFailed)
	}
}

// A prefetch whose command still waits in the queue (ordered while the
// node had no heartbeat stream) when the node registers again past its
// order timeout fails as not started, and its command is taken out of
// the queue: sent, it started a fill the manager had counted failed.
func TestQueuedPrefetchPastItsOrderTimeoutDroppedAtRegistration(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	ctx := context.Background()
	reg := func() {
		t.Helper()
		if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001",
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	reg() // no heartbeat stream: its commands wait in the queue
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n"}); err != nil {
		t.Fatal(err)
	}
	queued := func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return slices.ContainsFunc(e.m.nodes["n"].queue, func(c *pb.NodeCommand) bool { return c.GetPrefetch().GetTitleId() == "t1" })
	}
	if !queued() {
		t.Fatal("the prefetch of t1 is not queued")
	}
	e.m.mu.Lock()
	e.m.nodes["n"].pending["t1"].at = time.Now().Add(-2 * time.Minute) // ordered two timeouts ago
	e.m.mu.Unlock()
	reg()
	if s := e.storageStats(); s.FillsFailed != 1 {
		t.Fatalf("%d fills failed, want 1 (not started within the order timeout)", s.FillsFailed)
	}
	if queued() {
		t.Fatal("the prefetch of t1, failed as not started, is still queued for the node")
	}
}
