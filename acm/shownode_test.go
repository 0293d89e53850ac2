package acm

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// A SetNode without a change shows the node (vodctl node NODE asks it for
// a node ListNodes does not list): a registered one as ListNodes lists
// it, one not registered by its stored setting, on a restarted manager
// and on a standby too, which refused it as a change (FAILED_PRECONDITION)
// though nothing was to change; NOT_FOUND for a node with neither.
func TestSetNodeWithoutChangeShowsTheNode(t *testing.T) {
	ctx := context.Background()
	show := func(e *env, id string) (*pb.NodeInfo, error) {
		return e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: id})
	}
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	e.startNode("n1", nodeOpts{})
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true), Weight: ptr(int32(7)), Overload: ptr(0.9)}); err != nil {
		t.Fatal(err)
	}
	if info, err := show(e, "n1"); err != nil || info.RtspAddr == "" || !info.Draining || info.Weight != 7 || info.Overload != 0.9 {
		t.Fatalf("registered n1: %v %v, want its address, draining, weight 7, overload 0.9", info, err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManager(t, dir, nil) // n1 not registered with it
	info, err := show(e, "n1")
	if err != nil || info.RtspAddr != "" || !info.Draining || info.Weight != 7 || !info.WeightStored || info.Overload != 0.9 {
		t.Fatalf("n1 not registered, stored: %v %v, want no address, draining, weight 7 stored, overload 0.9", info, err)
	}
	if _, err := show(e, "nope"); grpcCode(err) != codes.NotFound {
		t.Fatalf("a node neither registered nor stored: %v, want NOT_FOUND", err)
	}
	if r, err := e.admin.ListNodes(ctx, &pb.ListNodesRequest{}); err != nil || len(r.Nodes) != 0 {
		t.Fatalf("shown, n1 registered: %v %v", r, err)
	}

	// On a shared store, the standby shows a node registered with the
	// active manager by its stored setting.
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, testTitles, nil)
	a.startNode("n2", nodeOpts{})
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	info, err = show(b, "n2")
	if err != nil || info.RtspAddr != "" || !info.Draining || info.WeightStored || info.Weight != 0 {
		t.Fatalf("standby, n2 registered with the active manager: %v %v, want its stored setting (draining, no weight)", info, err)
	}
	if _, err := show(b, "nope"); grpcCode(err) != codes.NotFound {
		t.Fatalf("standby, a node neither registered nor stored: %v, want NOT_FOUND", err)
	}
}

// On a store of its own, a SetNode without a change shows the setting
// this manager applies when the node registers: its own copy, which
// holds a change the store did not take (SetNode: "this manager keeps it
// until it restarts"), not the stored entry, which the node's
// registration does not read there. It showed the stored entry: weight
// none, where the node then registered with weight 7.
func TestSetNodeWithoutChangeShowsTheSettingKeptOnOwnStore(t *testing.T) {
	ctx := context.Background()
	b, err := store.OpenBadger(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// n1 was drained before this manager started, and has not registered
	// since.
	if err := b.PutState(ctx, stateNodeSettings, []byte(`{"n1":{"draining":true}}`)); err != nil {
		t.Fatal(err)
	}
	e := newManager(t, "", func(m *Manager) { m.Store = settingsRefusedBadger{b} })
	_, err = e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr(int32(7))})
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "this manager keeps it") {
		t.Fatalf("weight not saved: %v, want UNAVAILABLE saying this manager keeps it", err)
	}
	info, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1"})
	if err != nil || info.RtspAddr != "" || !info.Draining || !info.WeightStored || info.Weight != 7 {
		t.Fatalf("n1 not registered, weight 7 kept by this manager: %v %v, want draining, weight 7", info, err)
	}
	e.registerWith("n1")
	if n := e.nodeInfo("n1"); !n.Draining || n.Weight != 7 {
		t.Fatalf("n1 registered: draining %v, weight %d; want what was shown (draining, weight 7)", n.Draining, n.Weight)
	}
}
