package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// The storage planner orders no fill of a title onto a node whose
// egress_bps is less than the title's bitrate, so `vodctl fills` lists no
// such order in backoff: it planned a replica of a hot title on every
// node, the too small ones included (its replica count over all the
// nodes' mean egress), the manager refused those orders (no viewer could
// play the copy there) and they showed as failed fills in backoff, retried
// for ever (seen with `vodcluster up --node-egress-bps 500000` and its
// 0.6 Mbit/s titles). n1 (half the bitrate) and n2 (ten times it), "hot"
// promoted to two requests a second: its prefetch goes to n2 only, and no
// fill fails.
func TestPlanOrdersNoFillOnNodeTooSmall(t *testing.T) {
	titles := unhinted()
	for i, tt := range titles {
		if tt.GetId() == "hot" {
			c := proto.Clone(tt).(*pb.Title)
			c.PopularityPerDay = 2 * secondsPerDay
			titles[i] = c
		}
	}
	e := newManagerWith(t, "", titles, func(m *Manager) {
		m.PlanInterval, m.ShiftCheck = time.Hour, time.Hour
		m.Replicator.OffPeak = smm.Window{Start: 0, End: 24 * time.Hour}
	})
	n1 := e.startSimNode("n1", titles, simOpts{egress: titleBps / 2})
	n2 := e.startSimNode("n2", titles, simOpts{egress: 10 * titleBps})
	for range 3 {
		e.m.plan(time.Now())
	}
	if f := e.fill("n2", "hot"); f == nil {
		t.Fatalf("no fill of hot on n2 (egress ten times its bitrate): fills %v, n2 got %v", e.fills(), n2.commands())
	}
	for _, f := range e.fills() {
		if f.GetNodeId() == "n1" {
			t.Errorf("fill of %s listed on n1 (egress_bps %d, below the bitrate %d): %v", f.GetTitleId(), titleBps/2, titleBps, f)
		}
	}
	if c := n1.commands(); len(c) != 0 {
		t.Errorf("n1 got %v, want no order", c)
	}
	if s := e.storageStats(); s.GetFillsFailed() != 0 {
		t.Errorf("%d fills failed, want 0 (no order refused)", s.GetFillsFailed())
	}
}

// TestPinWarnsNodeTooSmall: a pin of a title to a node whose egress_bps
// is less than its bitrate is taken, and the answer says the title is
// never fetched there: the storage planner plans no copy there, so the
// pin stayed "(missing)" in `vodctl placement` for ever without a word.
// A pin to the cluster while no node can stream the title says so too. A
// pin to a node that can stream the title, or to a cluster with one, gets
// no such warning.
func TestPinWarnsNodeTooSmall(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	e.startNode("small", nodeOpts{egress: titleBps / 2})
	pin := func(title, node string) string {
		t.Helper()
		ack, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: title, NodeId: node})
		if err != nil {
			t.Fatal(err)
		}
		return ack.GetMessage()
	}
	if msg := pin("t1", "small"); !strings.Contains(msg, "its bitrate, 0.6 Mbit/s, is more than small can stream (egress_bps 0.3 Mbit/s): never fetched there") {
		t.Fatalf("pin to the node too small: %q", msg)
	}
	// To the cluster, while no node can stream it: said so too.
	if msg := pin("t2", ""); !strings.Contains(msg, "its bitrate, 0.6 Mbit/s, is more than any registered node can stream (the largest egress_bps is 0.3 Mbit/s)") {
		t.Fatalf("pin to the cluster of small nodes: %q", msg)
	}
	e.startNode("large", nodeOpts{egress: 10 * titleBps})
	if msg := pin("t1", "large"); msg != "pinned; fetching it there from the origin (vodctl fills shows the fill)" {
		t.Fatalf("pin to the node that can stream it: %q", msg)
	}
	if msg := pin("t3", ""); msg != "pinned; no node holds it: fetching it from the origin (vodctl fills shows the fill)" {
		t.Fatalf("pin to the cluster with a node that can stream it: %q", msg)
	}
}

// TestPinWarnsDiskTooSmall: a pin of a title to a node whose disk is
// smaller than the title is taken, its answer says the title is never
// fetched there, and the placement lists the pin as "never fetched", not
// "missing" (to be prefetched). (The planner took such a pin for the
// title's replica and unplanned its real copy, which was evicted.)
func TestPinWarnsDiskTooSmall(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	e.startNode("tiny", nodeOpts{disk: 1_000_000})
	ack, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if msg := ack.GetMessage(); !strings.Contains(msg, "it takes 1500000 bytes, more than tiny's disk (1000000 bytes): never fetched there") {
		t.Fatalf("pin to the node whose disk is too small: %q", msg)
	}
	r, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{TitleId: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if ps := r.GetNodePins(); len(ps) != 1 || ps[0].GetState() != "never fetched" {
		t.Fatalf("node pins %v, want t1 on tiny never fetched", ps)
	}
}

// TestPrefetchNotSentAgainToNodeTooSmall: the operator's prefetch of t1
// lost with n1's heartbeat stream is not sent again when n1 registers
// again with an egress_bps below t1's bitrate: it fails at the
// registration, and the next plan drops it (no fill listed). It was sent
// again (seen with `vodcluster up` and a node restarted with a smaller
// egress_bps: "prefetch sent again" and the node filled two copies no
// viewer could play there).
func TestPrefetchNotSentAgainToNodeTooSmall(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	n := e.startSimNode("n1", testTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1) // lost: the node does not act on it
	e.registerAgainEgress(n, titleBps/2)
	if f := e.fill("n1", "t1"); f != nil && f.State == "ordered" {
		t.Fatalf("fill %v after the registration with egress_bps %d, want it failed", f, titleBps/2)
	}
	e.m.plan(time.Now())
	if f := e.fill("n1", "t1"); f != nil {
		t.Fatalf("fill %v listed after the plan, want none (dropped)", f)
	}
	if k := n.count("prefetch t1"); k != 1 {
		t.Fatalf("t1 ordered %d times, want once", k)
	}
}
