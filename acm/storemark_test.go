package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestOperatorStateWrittenBackAfterTheStoreLostIt: a Redis that restarts
// without its data (run without appendonly, against the deployment
// guide's advice) holds none of the operator's settings. The manager
// serving the nodes, retaking its planner lock (gone with the rest),
// replaced its own with the empty store's: the node an operator drained
// for maintenance took viewers again, the suspended subscriber played,
// the policy set with vodctl went back to the configured one, the pins
// went, and a standby started later had none of them. Now, its lock's
// last holder, it keeps them and writes them back.
func TestOperatorStateWrittenBackAfterTheStoreLostIt(t *testing.T) {
	ctx := context.Background()
	open, srv := sharedRedis(t)
	st := open()
	a := newManager(t, "", onShared(open(), nil, time.Minute))
	a.startNode("n1", nodeOpts{})
	a.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002"})
	waitFor(t, 20*testLeaderTTL, "A to lead", a.m.Leader)
	a.setNode(&pb.SetNodeRequest{NodeId: "n2", Draining: ptr(true)})
	a.setNode(&pb.SetNodeRequest{NodeId: "n1", Weight: ptr[int32](50)})
	if _, err := a.admin.SuspendSubscriber(ctx, &pb.SuspendRequest{User: "demo", DurationS: 3600, Reason: "unpaid"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}

	if err := srv.Client(t).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*testLeaderTTL, "the store's mark written again", func() bool {
		_, err := st.State(ctx, stateStoreMark)
		return err == nil
	})
	waitFor(t, 20*testLeaderTTL, "A to lead again", a.m.Leader)
	a.m.mu.Lock()
	drained, weight := a.m.sched.Node("n2").Draining, a.m.sched.Node("n1").Weight
	_, suspended := a.m.suspended["demo"]
	policy := a.m.sched.Policy().Name()
	a.m.mu.Unlock()
	if !drained || weight != 50 || !suspended || policy != "rr" {
		t.Errorf("on A after the store lost its data: n2 draining %v, n1 weight %d, demo suspended %v, policy %q; want true, 50, true, rr",
			drained, weight, suspended, policy)
	}
	for name, want := range map[string]string{
		stateNodeSettings: `"n2":{"draining":true`, stateSuspensions: `"demo":`, statePolicy: `"rr"`, statePins: "t2",
	} {
		b, err := st.State(ctx, name)
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("stored %s after the write back: %s %v; want it to hold %s", name, b, err, want)
		}
	}

	// A standby started now has them from the store.
	b := newManager(t, "", onShared(open(), nil, time.Minute))
	b.m.mu.Lock()
	bDrained := b.m.nodeSettings["n2"].Draining
	_, bSuspended := b.m.suspended["demo"]
	b.m.mu.Unlock()
	if !bDrained || !bSuspended {
		t.Errorf("a standby started after the write back: n2 draining %v, demo suspended %v; want both", bDrained, bSuspended)
	}
}
