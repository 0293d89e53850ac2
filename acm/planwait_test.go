package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// After a whole-cluster restart the nodes register one by one. The first
// plan waits for the nodes the restored plan placed titles on: a plan
// that saw only the first node to register counted the copies of the
// others as missing and fetched them again onto it (here: "hot", held by
// n2, prefetched to n1 from the origin the moment n1 registered). Once n2
// registers the plan runs and fetches nothing. A node that does not come
// back holds the plan FirstPlanWait at most.
func TestFirstPlanWaitsForTheRestoredPlansNodes(t *testing.T) {
	dir := hotPlannedOnN2(t)

	r := newManagerWith(t, dir, storageTitles, func(m *Manager) {
		fastStorage(m)
		m.PlanInterval, m.FirstPlanWait = time.Hour, time.Hour // only the kicks plan
	})
	n1 := r.startSimNode("n1", storageTitles, simOpts{})
	r.m.planMu.Lock()
	w0 := r.m.firstPlan.waited
	r.m.planMu.Unlock()
	r.m.kickPlan()
	waitFor(t, 5*time.Second, "a plan after n1 registered", func() bool {
		r.m.planMu.Lock()
		defer r.m.planMu.Unlock()
		return r.m.firstPlan.waited > w0 || r.storageStats().Plans > 0
	})
	if got, f := n1.commands(), r.fills(); len(got) != 0 || len(f) != 0 {
		t.Fatalf("n1 was sent %v (prefetches ordered: %v) while n2, which holds hot, had not registered yet", got, f)
	}
	lf, err := r.admin.ListFills(context.Background(), &pb.ListFillsRequest{})
	if err != nil || len(lf.PlanWaitsFor) != 1 || lf.PlanWaitsFor[0] != "n2" || lf.PlanWaitsUntilUnixMs <= time.Now().UnixMilli() {
		t.Fatalf("ListFills while the plan waits: %v %v, want plan_waits_for [n2] and a deadline to come", lf, err)
	}
	r.startSimNode("n2", storageTitles, simOpts{held: []*pb.StoredTitle{stored("hot")}})
	waitFor(t, 5*time.Second, "the plan once n2 registered", func() bool { return r.storageStats().Plans > 0 })
	r.m.planMu.Lock()
	waiting := len(r.m.firstPlan.nodes) > 0
	r.m.planMu.Unlock()
	if got, f := n1.commands(), r.fills(); len(got) != 0 || len(f) != 0 || waiting {
		t.Fatalf("n1 was sent %v (prefetches ordered: %v) with n2 holding hot (still waiting: %v)", got, f, waiting)
	}
	if lf, err := r.admin.ListFills(context.Background(), &pb.ListFillsRequest{}); err != nil || len(lf.PlanWaitsFor) != 0 || lf.PlanWaitsUntilUnixMs != 0 {
		t.Fatalf("ListFills once n2 registered: %v %v, want no wait", lf, err)
	}
	if err := r.m.Close(); err != nil {
		t.Fatal(err)
	}

	// n2 does not come back: the plan waits FirstPlanWait, then plans
	// with the nodes there are.
	armed := time.Now() // before the manager's start, which arms the wait
	g := newManagerWith(t, dir, storageTitles, func(m *Manager) {
		fastStorage(m)
		m.FirstPlanWait = 300 * time.Millisecond
	})
	m1 := g.startSimNode("n1", storageTitles, simOpts{})
	m1.waitCommand(t, "prefetch hot", 1)
	if waited := time.Since(armed); waited < 300*time.Millisecond {
		t.Fatalf("hot prefetched to n1 %v after the start, before FirstPlanWait (300ms)", waited)
	}
}

// A manager taking over knows the nodes that registered with it before,
// dead since (the whole cluster went down): a dead node counts as not
// registered, so the plan waits for it to come back rather than fetch
// its copies again onto the first node that registers.
func TestFirstPlanWaitsForADeadNode(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.PlanInterval, m.ShiftCheck, m.FirstPlanWait = time.Hour, time.Hour, time.Hour // only the kicks plan
	})
	// n2, which holds hot, first: a plan that n1's registration kicked
	// before n2 registered would prefetch hot to n1.
	n2 := e.startSimNode("n2", storageTitles, simOpts{held: []*pb.StoredTitle{stored("hot")}})
	e.m.kickPlan()
	waitFor(t, 5*time.Second, "hot planned on n2", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.rep.Planned("n2", "hot")
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{})
	// No plan sees n2 dead before the takeover's wait is armed (a plan
	// n1's registration asked for would prefetch hot to n1): planMu held
	// from n2's death to the wait, as no plan runs in takeOver before it.
	e.m.planMu.Lock()
	n2.stop()
	waitFor(t, 5*time.Second, "n2 dead", func() bool { return !e.nodeInfo("n2").Alive })
	e.m.armPlanWaitLocked(e.m.now()) // as takeOver does
	w0 := e.m.firstPlan.waited
	e.m.planMu.Unlock()
	plans := e.storageStats().Plans
	e.m.kickPlan()
	waitFor(t, 5*time.Second, "a plan after the takeover", func() bool {
		e.m.planMu.Lock()
		defer e.m.planMu.Unlock()
		return e.m.firstPlan.waited > w0 || e.storageStats().Plans > plans
	})
	if got, f := n1.commands(), e.fills(); len(got) != 0 || len(f) != 0 {
		t.Fatalf("n1 was sent %v (prefetches ordered: %v) while n2, which holds hot, was dead after the takeover", got, f)
	}
}

// A node the restored plan names and this manager knows nothing else of
// (forgotten on the previous leader after its last popularity save) can
// be forgotten here: the answer is not NOT_FOUND, and the wait ends.
func TestForgetANodeKnownOnlyByTheWait(t *testing.T) {
	dir := hotPlannedOnN2(t)
	r := newManagerWith(t, dir, storageTitles, func(m *Manager) {
		fastStorage(m)
		m.FirstPlanWait = time.Hour
	})
	r.m.planMu.Lock()
	r.m.firstPlan.nodes = append(r.m.firstPlan.nodes, "n9")
	r.m.showPlanWait()
	r.m.planMu.Unlock()
	// An order the plan carries out says it waits.
	ack, err := r.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "p"})
	if err != nil || !strings.Contains(ack.GetMessage(), "the planner waits for nodes of its restored plan to register (n2, n9) until") {
		t.Fatalf("pin while the plan waits: %v %v", ack, err)
	}
	if _, err := r.admin.ForgetNode(context.Background(), &pb.ForgetNodeRequest{NodeId: "n9"}); err != nil {
		t.Fatalf("forget a node the plan waits for: %v", err)
	}
	lf, err := r.admin.ListFills(context.Background(), &pb.ListFillsRequest{})
	if err != nil || len(lf.PlanWaitsFor) != 1 || lf.PlanWaitsFor[0] != "n2" {
		t.Fatalf("ListFills after n9 was forgotten: %v %v, want the wait for n2 alone", lf, err)
	}
}

// A node of the restored plan the operator forgets (retired while the
// manager was down) is not waited for: the plan runs at once.
func TestFirstPlanWaitEndsWhenTheNodeIsForgotten(t *testing.T) {
	dir := hotPlannedOnN2(t)
	r := newManagerWith(t, dir, storageTitles, func(m *Manager) {
		fastStorage(m)
		m.FirstPlanWait = time.Hour
	})
	n1 := r.startSimNode("n1", storageTitles, simOpts{})
	if _, err := r.admin.ForgetNode(context.Background(), &pb.ForgetNodeRequest{NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	n1.waitCommand(t, "prefetch hot", 1)
}

// hotPlannedOnN2 runs a manager until its plan places "hot" on n2, which
// holds it, and closes it: its data directory, returned, holds that plan.
func hotPlannedOnN2(t *testing.T) string {
	dir := t.TempDir()
	e := newManagerWith(t, dir, storageTitles, fastStorage)
	e.startSimNode("n2", storageTitles, simOpts{held: []*pb.StoredTitle{stored("hot")}})
	waitFor(t, 5*time.Second, "hot planned on n2", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.rep.Planned("n2", "hot")
	})
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A node the operator forgets leaves the stored plan at once: a manager
// that restarts after a crash soon after the forget (before its next
// popularity save) does not hold its first plan for the forgotten node.
func TestForgottenNodeLeavesTheStoredPlan(t *testing.T) {
	dir := t.TempDir()
	e := newManagerWith(t, dir, storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Scheduler.MissedHeartbeats = 2
	})
	n2 := e.startSimNode("n2", storageTitles, simOpts{held: []*pb.StoredTitle{stored("hot")}})
	waitFor(t, 5*time.Second, "hot planned on n2", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.rep.Planned("n2", "hot")
	})
	e.m.savePopularity(time.Now().Add(stateWriteWait)) // the plan with n2, stored
	n2.stop()
	waitFor(t, 10*time.Second, "n2 dead", func() bool { return !e.nodeInfo("n2").Alive })
	if _, err := e.admin.ForgetNode(context.Background(), &pb.ForgetNodeRequest{NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	killManager(t, e) // no save at its Close

	r := newManagerWith(t, dir, storageTitles, func(m *Manager) {
		fastStorage(m)
		m.FirstPlanWait = time.Hour
	})
	lf, err := r.admin.ListFills(context.Background(), &pb.ListFillsRequest{})
	if err != nil || len(lf.PlanWaitsFor) != 0 {
		t.Fatalf("ListFills after the restart: %v %v, want no wait for the forgotten n2", lf, err)
	}
}
