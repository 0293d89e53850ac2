package acm

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// opStateRefusedRedis is a shared store (a store.Locker) whose writes of
// the policy and the node settings fail while refuse is set: a Redis
// that did not take them, answering again once refuse is cleared.
type opStateRefusedRedis struct {
	*store.Redis
	refuse *atomic.Bool
}

func (s opStateRefusedRedis) PutState(ctx context.Context, name string, b []byte) error {
	if s.refuse.Load() && (name == stateNodeSettings || name == statePolicy) {
		return errors.New("operator state refused")
	}
	return s.Redis.PutState(ctx, name, b)
}

// A policy and a node setting put in force on the active manager but not
// saved (vodctl exit 3) stayed unsaved until a restart, which then
// applied the stored ones, when the manager held its planner lock
// throughout: nothing saved them once the store took writes again. The
// holder now saves them after a renewal (saveUnsavedOp), keeping the
// stored settings of the other nodes.
func TestUnsavedChangesSavedOnceTheStoreTakesThem(t *testing.T) {
	open, _ := sharedRedis(t)
	var refuse atomic.Bool
	st := opStateRefusedRedis{Redis: open(), refuse: &refuse}
	e := newManager(t, "", onShared(st, nil, time.Minute))
	e.startNode("n1", nodeOpts{})
	if !e.m.Leader() {
		t.Fatal("the manager alone on the store does not hold the planner lock")
	}
	ctx := context.Background()
	rd := open()
	// n2's setting, stored by the standby it registered with.
	if err := rd.PutState(ctx, stateNodeSettings, []byte(`{"n2":{"draining":true}}`)); err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	if _, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "wlc"}); !pb.IsNotSaved(err) {
		t.Fatalf("policy wlc, store refusing: %v; want it in use but not saved", err)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); !pb.IsNotSaved(err) {
		t.Fatalf("drain of n1, store refusing: %v; want it in force but not saved", err)
	}
	if got := storedPolicyOf(t, rd); got == "wlc" {
		t.Fatal("policy stored though the store refused it")
	}
	refuse.Store(false)
	waitFor(t, 10*time.Second, "the policy and n1's drain saved once the store takes them", func() bool {
		settings, _ := storedSettings(t, rd)
		return storedPolicyOf(t, rd) == "wlc" && settings["n1"].Draining
	})
	if settings, raw := storedSettings(t, rd); !settings["n2"].Draining {
		t.Errorf("stored node settings: %s; want n2's drain kept", raw)
	}
	if !e.m.Leader() || e.m.sched.Policy().Name() != "wlc" || !e.nodeInfo("n1").Draining {
		t.Errorf("leader %v, policy %s, n1 draining %v; want the leader, wlc, drained", e.m.Leader(), e.m.sched.Policy().Name(), e.nodeInfo("n1").Draining)
	}
}
