package acm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// The operator's prefetch dropped by a plan (its node drained past its
// retry time by the backoff cap), ordered again while that plan runs:
// the new order waits for the plan (lockBetweenPlans), which forgets the
// old one first; the new order is the operator's, listed, and stays in
// the store. The removal of the old order's stored entry, in the
// background, came after the new order's write and removed it: a restart
// or a takeover forgot the order the operator had just given.
func TestOperatorPrefetchOrderedAgainDuringTheDroppingPlanStaysStored(t *testing.T) {
	var log logtest.Buffer
	e, n1 := droppedEnv(t, &log, simOpts{})
	orderFailing(t, e, n1)
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.outOfService("n1")
	n1.setFailing(false)
	type answer struct {
		ack *pb.PlacementAck
		err error
	}
	again := make(chan answer, 1)
	e.m.planMu.Lock()
	e.planWith(time.Now().Add(3*time.Minute), func() {
		// The plan's view has n1 drained: it drops the order. Meanwhile
		// the operator puts n1 back in service and orders it again.
		e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false)})
		go func() {
			ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
			again <- answer{ack, err}
		}()
		waitFor(t, 5*time.Second, "the new order waiting for the plan", func() bool {
			if e.m.opMu.TryLock() {
				e.m.opMu.Unlock()
				return false
			}
			return true
		})
	})
	e.m.planMu.Unlock()
	var a answer
	select {
	case a = <-again:
	case <-time.After(10 * time.Second):
		t.Fatal("the prefetch ordered again did not answer")
	}
	if a.err != nil || !strings.HasPrefix(a.ack.GetMessage(), "prefetch ordered") {
		t.Fatalf("prefetch of t1 on n1 again: %v %v, want it ordered", a.ack, a.err)
	}
	if !strings.Contains(log.String(), "operator's prefetch dropped by the planner") {
		t.Fatal("the plan did not drop the first order")
	}
	e.m.orderWrites.Wait() // the old order's removal from the store
	if o := storedOrders(t, e); len(o) != 1 || o[0].Node != "n1" || o[0].Title != "t1" {
		t.Errorf("stored orders %+v, want the new order of t1 on n1", o)
	}
	if !e.marked("n1", "t1") {
		t.Error("the new order is not marked as the operator's")
	}
}

// The operator's prefetch dropped by the last plan before the manager
// closes is not ordered again by the next manager: Close waits for the
// removal of its stored order, which ran in the background and could
// come after the store closed (the restarted manager then queued the
// order the warning said was dropped, with fresh retries).
func TestOperatorPrefetchDroppedJustBeforeCloseNotRestored(t *testing.T) {
	dir := t.TempDir()
	var log logtest.Buffer
	conf := func(m *Manager) {
		quietStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Minute, time.Minute
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	}
	e := newManagerWith(t, dir, unhinted(), conf)
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	orderFailing(t, e, n1)
	e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)})
	e.outOfService("n1")
	e.planAt(3 * time.Minute) // its retry time and the cap past: dropped
	if !strings.Contains(log.String(), "operator's prefetch dropped by the planner") {
		t.Fatal("the plan did not drop the order")
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := newManagerWith(t, dir, unhinted(), func(m *Manager) { quietStorage(m) })
	if o := storedOrders(t, e2); len(o) != 0 {
		t.Fatalf("stored orders %+v after the close, want none: the dropped order would be queued again", o)
	}
}
