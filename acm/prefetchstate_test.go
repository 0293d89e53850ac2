package acm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// storedOrders returns the operator's prefetch orders in e's store.
func storedOrders(t *testing.T, e *env) []opOrder {
	t.Helper()
	b, err := e.m.st.State(context.Background(), statePrefetches)
	if err != nil {
		return nil
	}
	var out []opOrder
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// An operator's prefetch queued behind the node's fill limit outlives a
// manager restart: the restarted manager queues it again when the node
// registers and orders it first; carried out, it leaves the store.
func TestOperatorPrefetchOutlivesARestart(t *testing.T) {
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
	if o := storedOrders(t, e); len(o) != 1 || o[0].Node != "n1" || o[0].Title != "t1" {
		t.Fatalf("stored orders %+v, want t1 on n1", o)
	}
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newManagerWith(t, dir, storageTitles, conf)
	n2 := e2.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	n2.waitCommand(t, "prefetch t1", 1)
	if got := n2.commands(); got[0] != "prefetch t1" {
		t.Fatalf("commands %v: want the operator's prefetch first", got)
	}
	n2.complete("t1")
	waitFor(t, 5*time.Second, "the carried out order gone from the store", func() bool { return len(storedOrders(t, e2)) == 0 })
}

// An operator's prefetch its node is filling when a restarted manager (or
// the standby taking over) loads it stays in the store, and when that fill
// fails the new manager orders it again after its backoff; carried out,
// it leaves the store. (It was taken as carried out at the registration:
// removed from the store and never retried.)
func TestOperatorPrefetchFillingAtRestartRetried(t *testing.T) {
	dir := t.TempDir()
	conf := func(m *Manager) {
		fastStorage(m)
		m.Replicator.MaxFillsPerNode = 1
		m.Replicator.RetryBase = 50 * time.Millisecond
	}
	e := newManagerWith(t, dir, storageTitles, conf)
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	n.waitCommand(t, "prefetch hot", 1)
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newManagerWith(t, dir, storageTitles, conf)
	filling := &pb.StoredTitle{TitleId: "t1", SizeBytes: 1_000_000, StoredBytes: 300_000, Filling: true, Prefetch: true}
	n2 := e2.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000, held: []*pb.StoredTitle{filling},
		before: func(n *simNode) { n.autoComplete = true }}) // the plan's own prefetches (hot) take no fill slot for long
	waitFor(t, 5*time.Second, "t1 listed filling on n1", func() bool {
		f := e2.fill("n1", "t1")
		return f != nil && f.State == "filling"
	})
	if o := storedOrders(t, e2); len(o) != 1 || o[0].Title != "t1" {
		t.Fatalf("stored orders %+v while the order is filling, want t1 on n1 kept", o)
	}
	n2.drop("t1") // the fill failed on the node
	n2.waitCommand(t, "prefetch t1", 1)
	n2.complete("t1")
	waitFor(t, 5*time.Second, "the carried out order gone from the store", func() bool { return len(storedOrders(t, e2)) == 0 })
}

// An operator's prefetch cancelled by an eviction (queued, not carried
// out) leaves the store, and a forgotten node's orders go with it.
func TestOperatorPrefetchOrderCancelled(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Replicator.MaxFillsPerNode = 1
	})
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	n.waitCommand(t, "prefetch hot", 1)
	ctx := context.Background()
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	ack, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "cancelled") || ack.GetTitleId() != "t1" || ack.GetNodeId() != "n1" {
		t.Fatalf("evict of the queued prefetch: %v %v, want it cancelled, title t1 on n1", ack, err)
	}
	if o := storedOrders(t, e); len(o) != 0 {
		t.Fatalf("stored orders after the cancel: %+v", o)
	}
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.stop()
	waitFor(t, 10*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
	if _, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if o := storedOrders(t, e); len(o) != 0 {
		t.Fatalf("stored orders after the node was forgotten: %+v", o)
	}
}
