package acm

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// setNode changes node id through the admin API.
func (e *env) setNode(req *pb.SetNodeRequest) {
	e.t.Helper()
	if _, err := e.admin.SetNode(context.Background(), req); err != nil {
		e.t.Fatal(err)
	}
}

// settled moves the manager's start RestoreGrace back, as if it had been
// active that long: the nodes that register after a start (before which
// nothing is refused at once) are in.
func (e *env) settled() {
	e.m.mu.Lock()
	e.m.startedAt = e.m.startedAt.Add(-e.m.RestoreGrace)
	e.m.mu.Unlock()
}

// With every node drained or at weight 0 no node could take a viewer
// until an operator acts: RTSP and HTTP requests are refused at once
// (503 with Retry-After), not after the queue deadline, and nothing is
// queued or reserved. Put back in service, a node takes the next one.
func TestEveryNodeDrainedRefusedAtOnce(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 20 * time.Second })
	e.startNode("n1", nodeOpts{})
	e.startNode("n2", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.setNode(&pb.SetNodeRequest{NodeId: "n2", Weight: ptr[int32](0)})
	e.settled()
	start := time.Now()
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusServiceUnavailable || len(res.Header["Retry-After"]) != 1 || res.Header["Retry-After"][0] != "20" {
		t.Fatalf("RTSP with every node drained: %d %q, Retry-After %v", res.StatusCode, res.StatusMessage, res.Header["Retry-After"])
	}
	hres := e.get("GET", "/vod/t1.ts", "demo", "demo")
	if hres.StatusCode != http.StatusServiceUnavailable || hres.Header.Get("Retry-After") != "20" {
		t.Fatalf("HTTP with every node drained: %d, Retry-After %q", hres.StatusCode, hres.Header.Get("Retry-After"))
	}
	if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
		t.Fatalf("refused after %v: waited for the queue deadline %v", waited, e.m.QueueDeadline)
	}
	if e.queued() != 0 || len(e.sessions()) != 0 || e.reserved("n1") != 0 || e.reserved("n2") != 0 {
		t.Fatal("a refusal left state behind")
	}
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false)})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("n1 undrained: %d", res.StatusCode)
	}
}

// A request waiting for a full node is refused as soon as the operator
// drains that node, the last one that could take it.
func TestDrainRefusesTheWaitingAtOnce(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 20 * time.Second })
	e.startNode("n1", nodeOpts{egress: titleBps})
	e.admitOne("t1")
	e.settled()
	got := make(chan *base.Response, 1)
	start := time.Now()
	go func() { got <- e.describe("demo", "demo", "t2") }()
	waitFor(t, 5*time.Second, "the request to queue for the full node", func() bool { return e.queued() == 1 })
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	select {
	case res := <-got:
		if res.StatusCode != base.StatusServiceUnavailable || len(res.Header["Retry-After"]) != 1 {
			t.Fatalf("waiting request after the drain: %d, Retry-After %v", res.StatusCode, res.Header["Retry-After"])
		}
		if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
			t.Fatalf("refused after %v: waited for the queue deadline", waited)
		}
	case <-time.After(e.m.QueueDeadline / 2):
		t.Fatal("the waiting request still waits after the drain of the last node")
	}
	if e.queued() != 0 || e.reserved("n1") != titleBps {
		t.Fatalf("queued %d, reserved %d", e.queued(), e.reserved("n1"))
	}
}

// A node that may come back by itself keeps the request waiting: n2,
// whose heartbeat stream broke and which is dead within restore_grace, is
// expected back; the request waits and is placed when n2 registers
// again.
func TestDeadNodeWithinGraceKeepsRequestWaiting(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 20 * time.Second }) // restore_grace 30 s
	e.startNode("n1", nodeOpts{})
	n2 := e.startNode("n2", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.settled()
	n2.stop()
	waitFor(t, 5*time.Second, "n2 dead", func() bool { return !e.nodeInfo("n2").Alive })
	got := make(chan int, 1)
	go func() { got <- int(e.describe("demo", "demo", "t1").StatusCode) }()
	waitFor(t, 5*time.Second, "the request to queue for n2's return", func() bool { return e.queued() == 1 || len(got) > 0 })
	if len(got) > 0 {
		t.Fatalf("n2 dead within restore_grace: refused %d at once", <-got)
	}
	e.startNode("n2", nodeOpts{})
	select {
	case code := <-got:
		if code != int(base.StatusFound) {
			t.Fatalf("n2 back: %d", code)
		}
	case <-time.After(e.m.QueueDeadline):
		t.Fatal("still waiting after n2 came back")
	}
}

// A node dead beyond restore_grace is not expected back by itself: with
// the other node drained, a request is refused at once.
func TestDeadNodeBeyondGraceDoesNotHoldTheQueue(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.QueueDeadline = 20 * time.Second
		m.RestoreGrace = 300 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{})
	n2 := e.startNode("n2", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	n2.stop()
	waitFor(t, 5*time.Second, "n2 dead beyond restore_grace", func() bool {
		// LastHeartbeatUnixMs is truncated to the millisecond, and on
		// the wall clock: 10 ms more, so that the manager's own check,
		// to the nanosecond, holds too.
		n := e.nodeInfo("n2")
		return !n.Alive && time.Since(time.UnixMilli(n.LastHeartbeatUnixMs)) > e.m.RestoreGrace+10*time.Millisecond
	})
	start := time.Now()
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("n1 drained, n2 dead beyond restore_grace: %d", res.StatusCode)
	}
	if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
		t.Fatalf("refused after %v: waited for the queue deadline", waited)
	}
}

// Right after the manager starts, its nodes may still be registering: a
// drained one alone is no proof that none could take the viewer, and the
// request waits out the queue deadline (453), as when nodes are full.
func TestDrainedRightAfterStartWaits(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 500 * time.Millisecond }) // restore_grace 30 s
	e.startNode("n1", nodeOpts{})
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	start := time.Now()
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("n1 drained, the manager just started: %d, want 453", res.StatusCode)
	}
	if waited := time.Since(start); waited < e.m.QueueDeadline {
		t.Fatalf("refused after %v, before the queue deadline", waited)
	}
}

// With site_only, a site whose every node is drained refuses its viewers
// at once, though nodes of other sites are in service; the log names the
// site and its nodes.
func TestSiteDrainedRefusedAtOnce(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.Sites = []Site{
			{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
			{Name: "south", Clients: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
		}
		m.SiteOnly = true
		m.QueueDeadline = 20 * time.Second
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("north-1", nodeOpts{rtsp: "127.0.0.1:7001", site: "north"})
	e.startNode("south-1", nodeOpts{rtsp: "127.0.0.1:7002", site: "south"})
	e.setNode(&pb.SetNodeRequest{NodeId: "north-1", Draining: ptr(true)})
	e.settled()
	start := time.Now()
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("the north drained: %d, want 503", res.StatusCode)
	}
	if waited := time.Since(start); waited > e.m.QueueDeadline/2 {
		t.Fatalf("refused after %v: waited for the queue deadline", waited)
	}
	for _, want := range []string{`every node of the viewer's site \"north\" (site_only) that could take it is drained or at weight 0`, `north-1 (drained)`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, log.String())
		}
	}
}
