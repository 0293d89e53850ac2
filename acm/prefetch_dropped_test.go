package acm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// planAt runs one plan d ahead, as the plan loop would (planMu held
// through it).
func (e *env) planAt(d time.Duration) {
	e.m.planMu.Lock()
	defer e.m.planMu.Unlock()
	e.planWith(time.Now().Add(d), func() {})
}

// marked reports whether the manager marks the prefetch of title on node
// as the operator's.
func (e *env) marked(node, title string) bool {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.handOrders[[2]string{node, title}]
}

// outOfService waits until node is out of service.
func (e *env) outOfService(node string) {
	e.t.Helper()
	waitFor(e.t, 5*time.Second, node+" out of service", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return !e.m.sched.InService(e.m.sched.Node(node))
	})
}

// droppedForgotten checks that the operator's prefetch of t1 on n1,
// dropped by the planner, is forgotten: no longer the operator's order
// (its mark), out of the store, not listed by vodctl fills, and said in a warning naming
// the node, the title, the failures and why.
func droppedForgotten(t *testing.T, e *env, log *logtest.Buffer, failures int, why string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the dropped order gone from the store", func() bool { return len(storedOrders(t, e)) == 0 })
	if e.marked("n1", "t1") {
		t.Error("the dropped prefetch is still marked as the operator's order")
	}
	// The node's own transfer may be listed (node down: the last report
	// of a dead node), not the order with its tries.
	if f := e.fill("n1", "t1"); f != nil && (f.State == "backoff" || f.State == "queued" || f.Attempts > 0) {
		t.Errorf("the dropped prefetch is listed: %+v", f)
	}
	waitFor(t, 10*time.Second, "the warning", func() bool {
		s := log.String()
		return strings.Contains(s, "operator's prefetch dropped by the planner") &&
			strings.Contains(s, fmt.Sprintf("node=n1 title=t1 failures=%d", failures)) && strings.Contains(s, `why="`+why+`"`)
	})
}

// orderFailing orders the operator's prefetch of t1 on n1, which fails
// it, and waits for it in backoff after its first failure.
func orderFailing(t *testing.T, e *env, n1 *simNode) {
	t.Helper()
	n1.setFailing(true)
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.HasPrefix(ack.GetMessage(), "prefetch ordered;") {
		t.Fatalf("prefetch of t1 on n1: %v %v, want it ordered", ack, err)
	}
	if o := storedOrders(t, e); len(o) != 1 || o[0].Node != "n1" || o[0].Title != "t1" {
		t.Fatalf("stored orders %+v, want t1 on n1", o)
	}
	waitFor(t, 10*time.Second, "the try failed", func() bool {
		f := e.fill("n1", "t1")
		return f != nil && f.State == "backoff" && f.Attempts == 1
	})
}

// droppedEnv is a manager whose backoff is one minute, first and cap,
// logging to log, with n1 and n2.
func droppedEnv(t *testing.T, log *logtest.Buffer, n1 simOpts) (*env, *simNode) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Minute, time.Minute
		m.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
	n1.disk = 5_000_000
	n := e.startSimNode("n1", storageTitles, n1)
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	return e, n
}

// The operator's failed prefetch whose node stays out of service (drained,
// dead) past its retry time by the backoff cap is forgotten by the
// planner (no longer retried, nor listed): the manager forgets it as the
// operator's order too, removes its stored order and says so. The mark
// and the stored order stayed: a restart within the order's TTL ordered
// it again with fresh retries, and a later failed prefetch of the
// planner's own there was named as the operator's order.
func TestOperatorPrefetchNotRetriedOutOfServiceForgotten(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  func(e *env, n1 *simNode)
	}{
		{"drained", func(e *env, _ *simNode) { e.setNode(&pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}) }},
		{"dead", func(_ *env, n1 *simNode) { n1.leave() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log logtest.Buffer
			e, n1 := droppedEnv(t, &log, simOpts{})
			orderFailing(t, e, n1)
			tc.out(e, n1)
			e.outOfService("n1")
			e.planAt(30 * time.Second) // within its backoff: kept
			if !e.marked("n1", "t1") || len(storedOrders(t, e)) != 1 {
				t.Fatal("the order forgotten within its backoff")
			}
			e.planAt(3 * time.Minute) // its retry time and the cap past
			droppedForgotten(t, e, &log, 1, smm.DropNotRetried)
		})
	}
}

// The operator's prefetch whose last try (the smm.MaxHandRetries-th) is
// under way on a node that dies is given up by the planner: the manager
// forgets it as the operator's order, removes its stored order and says
// so. Nothing was said, and the mark and the stored order stayed.
func TestOperatorPrefetchLastTryOnANodeGoneForgotten(t *testing.T) {
	var log logtest.Buffer
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Millisecond, time.Hour
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
	e.startSimNode("n2", storageTitles, simOpts{disk: 5_000_000})
	orderFailing(t, e, n1)
	for attempts := 1; attempts < smm.MaxHandRetries-1; {
		e.planOnce()
		waitFor(t, 10*time.Second, "the try failed", func() bool {
			f := e.fill("n1", "t1")
			return f != nil && f.State == "backoff" && int(f.Attempts) > attempts
		})
		attempts = int(e.fill("n1", "t1").Attempts)
	}
	n1.setFailing(false)
	e.planOnce()
	waitFor(t, 10*time.Second, "the last try under way", func() bool {
		f := e.fill("n1", "t1")
		return f != nil && f.State == "filling"
	})
	n1.leave()
	e.outOfService("n1")
	e.planOnce()
	droppedForgotten(t, e, &log, smm.MaxHandRetries, smm.DropNodeLeft)
}

// The operator's failed prefetch waiting for its retry on a node that
// registers again without an origin is given up by the planner: the
// manager forgets it as the operator's order, removes its stored order
// and says so. Nothing was said, and the mark and the stored order
// stayed.
func TestOperatorPrefetchInBackoffOnANodeWithoutOriginForgotten(t *testing.T) {
	var log logtest.Buffer
	e, n1 := droppedEnv(t, &log, simOpts{})
	orderFailing(t, e, n1)
	n1.stop()
	e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, noOrigin: true})
	waitFor(t, 5*time.Second, "n1 without an origin", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		n := e.m.sched.Node("n1")
		return n != nil && n.NoOrigin && e.m.sched.InService(n)
	})
	e.planAt(90 * time.Second) // its retry time past
	droppedForgotten(t, e, &log, 1, smm.DropNoOrigin)
}
