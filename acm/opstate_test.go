package acm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"

	"google.golang.org/grpc/codes"
)

// TestOperatorSettingsSurviveRestart: a drain and a weight set by the
// operator, and an eviction hold, are in the store: a manager restarted
// on the same data directory applies the drain and weight when the node
// registers again (and tells the node it drains), and keeps the hold.
func TestOperatorSettingsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := newManagerWith(t, dir, storageTitles, fastStorage)
	n := e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1")}})
	e.startSimNode("n2", storageTitles, simOpts{})
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2", Weight: ptr(int32(40))}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "drain true", 1)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e = newManagerWith(t, dir, storageTitles, fastStorage)
	n = e.startSimNode("n1", storageTitles, simOpts{})
	e.startSimNode("n2", storageTitles, simOpts{})
	if info := e.nodeInfo("n1"); !info.Draining {
		t.Fatal("n1's drain forgotten by the restarted manager")
	}
	if info := e.nodeInfo("n2"); info.Weight != 40 {
		t.Fatalf("n2's weight %d after the restart, want 40", info.Weight)
	}
	n.waitCommand(t, "drain true", 1)
	e.m.mu.Lock()
	holds := e.m.rep.Holds(time.Now())
	e.m.mu.Unlock()
	if len(holds) != 1 || holds[0].Node != "n1" || holds[0].Title != "t1" {
		t.Fatalf("eviction holds after the restart: %v", holds)
	}
}

// storedSettings reads the node settings as st holds them, decoded and
// raw (for messages).
func storedSettings(t *testing.T, st store.Store) (map[string]nodeSetting, []byte) {
	t.Helper()
	raw, err := st.State(context.Background(), stateNodeSettings)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]nodeSetting
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	return stored, raw
}

// waitDrainCmd waits for a DrainCommand to n with the given value,
// skipping other commands; it fails after waitForMin.
func waitDrainCmd(t *testing.T, n *fakeNode, want bool) {
	t.Helper()
	deadline := time.After(waitForMin)
	for {
		select {
		case c := <-n.cmds:
			if d := c.GetDrain(); d != nil && d.GetDrain() == want {
				return
			}
		case <-deadline:
			t.Fatalf("no drain %v command to %s", want, n.id)
		}
	}
}

// TestNodeSettingsOnASharedStore: two managers share a Redis store. A
// drain made on the leader reaches the standby when the node moves there
// (the node is told it drains), and survives the takeover; an undrain
// made on the leader after the standby started is what the standby
// applies; a setting made on the standby for a node registered with it
// keeps the leader's entries in the store, one for a node it does not
// serve is refused.
func TestNodeSettingsOnASharedStore(t *testing.T) {
	open, _ := sharedRedis(t)
	ctx := context.Background()
	check := open()
	a := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	b := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	n1 := a.startNode("n1", nodeOpts{})
	n2 := a.startNode("n2", nodeOpts{})
	n3 := a.startNode("n3", nodeOpts{})
	a.keepServing() // else the lock would go to b once the nodes move there
	for _, id := range []string{"n1", "n2"} {
		if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: id, Draining: ptr(true)}); err != nil {
			t.Fatal(err)
		}
	}
	waitDrainCmd(t, n2, true)
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2", Draining: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	// A change asked of the standby for a node it does not serve would
	// wait in the store for a takeover: refused, naming the active one.
	if _, err := b.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n3", Weight: ptr(int32(60))}); grpcCode(err) != codes.FailedPrecondition {
		t.Fatalf("standby, node registered with the leader: %v, want FAILED_PRECONDITION", err)
	}
	// The nodes move to the standby (the front door's address moved).
	n1.stop()
	n2.stop()
	n3.stop()
	m1 := b.registerWith("n1")
	b.registerWith("n2")
	b.registerWith("n3")
	waitDrainCmd(t, m1, true)
	if !b.nodeInfo("n1").Draining || b.nodeInfo("n2").Draining {
		t.Fatalf("standby: n1 draining %v (want true), n2 %v (want false)", b.nodeInfo("n1").Draining, b.nodeInfo("n2").Draining)
	}
	if _, err := b.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n3", Weight: ptr(int32(50))}); err != nil {
		t.Fatal(err)
	}
	stored, raw := storedSettings(t, check)
	if !stored["n1"].Draining || stored["n3"].Weight == nil || *stored["n3"].Weight != 50 || len(stored) != 2 {
		t.Fatalf("stored settings %s: want n1 draining and n3's weight (n2 undrained: no entry)", raw)
	}
	// The leader undrains n1, which is no longer registered with it (its
	// stored setting is changed); at the takeover the standby applies it
	// and tells the node.
	if info, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false)}); err != nil || info.Draining {
		t.Fatalf("undrain of a node not registered here: %v %v", info, err)
	}
	a.m.Close()
	waitFor(t, 20*testLeaderTTL, "the standby to take over", b.m.Leader)
	waitDrainCmd(t, m1, false)
	if b.nodeInfo("n1").Draining || b.nodeInfo("n2").Draining || b.nodeInfo("n3").Weight != 50 {
		t.Fatalf("after the takeover: n1 draining %v, n2 draining %v, n3 weight %d", b.nodeInfo("n1").Draining,
			b.nodeInfo("n2").Draining, b.nodeInfo("n3").Weight)
	}
	if _, err := b.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n9", Draining: ptr(true)}); grpcCode(err) != codes.NotFound {
		t.Fatalf("a node never seen: %v", err)
	}
}

// TestNodeSettingFieldsMergeOnASharedStore: a manager that changes one
// field of a node's setting keeps the fields another manager changed
// since it loaded them (the stored entry is the base, not its own copy).
func TestNodeSettingFieldsMergeOnASharedStore(t *testing.T) {
	open, _ := sharedRedis(t)
	ctx := context.Background()
	check := open()
	b := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute))
	b.startNode("n1", nodeOpts{})
	if _, err := b.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	a := newManager(t, "", onShared(open(), &countPlanner{}, time.Minute)) // loads n1 draining
	a.registerWith("n1")                                                   // the standby serves it too (a standby changes only the nodes it serves)
	if _, err := b.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false), Weight: ptr(int32(70))}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Overload: ptr(0.8)}); err != nil {
		t.Fatal(err)
	}
	stored, raw := storedSettings(t, check)
	if st := stored["n1"]; st.Draining || st.Overload != 0.8 || st.Weight == nil || *st.Weight != 70 {
		t.Fatalf("stored %s: want n1 undrained, weight 70, overload 0.8", raw)
	}
}

// TestPolicySurvivesRestart: the scheduling policy an operator sets is
// kept in the store and used again by a manager restarted with the same
// configuration; once the configuration names another policy, the
// configuration wins.
func TestPolicySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := newManager(t, dir, nil)
	if _, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "wlc"}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManager(t, dir, nil)
	if p, err := e.admin.GetPolicy(ctx, &pb.GetPolicyRequest{}); err != nil || p.Policy != "wlc" {
		t.Fatalf("policy after a restart: %v %v, want wlc", p, err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManager(t, dir, func(m *Manager) { m.Scheduler.Policy = "rr" })
	if p, err := e.admin.GetPolicy(ctx, &pb.GetPolicyRequest{}); err != nil || p.Policy != "rr" {
		t.Fatalf("policy after the configuration changed: %v %v, want the configured rr", p, err)
	}
}

// Stored operator state that is JSON null (a nil map or slice marshalled
// by hand or by a tool) reads as none: the operator's changes merge into
// it (a nil map from it made SetNode panic, taking the manager down), and
// forgetting a node reads it.
func TestStoredNullStateReadsAsNone(t *testing.T) {
	ctx := context.Background()
	e := newManagerWith(t, "", storageTitles, fastStorage)
	e.startSimNode("n1", storageTitles, simOpts{})
	for _, name := range []string{stateNodeSettings, stateEvictHolds, statePins, stateForgotten} {
		if err := e.m.st.PutState(ctx, name, []byte("null")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr(int32(40))}); err != nil {
		t.Fatalf("SetNode over stored null settings: %v", err)
	}
	b, err := e.m.st.State(ctx, stateNodeSettings)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]nodeSetting
	if err := json.Unmarshal(b, &got); err != nil || got["n1"].Weight == nil || *got["n1"].Weight != 40 {
		t.Fatalf("stored settings %s (%v), want n1's weight 40", b, err)
	}
	if _, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "gone"}); grpcCode(err) != codes.NotFound {
		t.Fatalf("forget an unknown node over stored null state: %v, want NOT_FOUND", err)
	}
}

// SetNode's answer for a node not registered since the manager started
// says whether a weight is stored for it (weight_stored): a stored 0 (no
// new sessions once it registers) and no weight stored (it gets the one
// it announces) both answered weight 0, and vodctl could not tell them.
func TestAbsentNodeStoredWeightZero(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := newManager(t, dir, nil)
	e.startNode("n1", nodeOpts{})
	e.startNode("n2", nodeOpts{})
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr(int32(0))}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n2", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e = newManager(t, dir, nil) // the nodes not registered with it
	for _, c := range []struct {
		node   string
		stored bool
	}{{"n1", true}, {"n2", false}} {
		info, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: c.node, Overload: ptr(0.9)})
		if err != nil || info.GetRtspAddr() != "" || info.GetWeight() != 0 || info.GetWeightStored() != c.stored || info.GetOverload() != 0.9 {
			t.Errorf("%s: %v %v, want not registered, weight 0, weight_stored %v", c.node, info, err, c.stored)
		}
	}
}
