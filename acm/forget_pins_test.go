package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// Forgetting a node counts among the commands dropped the protect command
// of its pins due for it (a pin changed while it was away), kept apart
// from its queue (nodeState.pins): it was counted while it waited in the
// queue, then left out.
func TestForgetCountsTheDueProtectCommand(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	n := e.startNode("n1", nodeOpts{})
	n.leave()
	waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
	if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1"}); err != nil { // to the cluster: due for n1
		t.Fatal(err)
	}
	e.m.mu.Lock()
	due, queued := e.m.nodes["n1"].pins != nil, len(e.m.nodes["n1"].queue)
	e.m.mu.Unlock()
	if !due {
		t.Fatal("no protect command due for the node away")
	}
	r, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := int32(queued + 1); r.GetCommandsDropped() != want || !strings.Contains(r.GetMessage(), "queued for its return dropped") {
		t.Fatalf("forget: %d commands dropped (%q), want %d: the queued ones and the due protect command", r.GetCommandsDropped(), r.GetMessage(), want)
	}
}

// Forgetting a node counts among the commands dropped the drain command
// due for it (the operator drained it while it was away), kept apart from
// its queue (nodeState.drain) as its pins are.
func TestForgetCountsTheDueDrainCommand(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	n := e.startNode("n1", nodeOpts{})
	n.leave()
	waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	e.m.mu.Lock()
	ns := e.m.nodes["n1"]
	due, want := ns.drain != nil, int32(len(ns.queue)+1)
	if ns.pins != nil {
		want++
	}
	e.m.mu.Unlock()
	if !due {
		t.Fatal("no drain command due for the node away")
	}
	r, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetCommandsDropped() != want {
		t.Fatalf("forget: %d commands dropped (%q), want %d: the queued ones and the due drain command", r.GetCommandsDropped(), r.GetMessage(), want)
	}
}
