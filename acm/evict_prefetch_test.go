package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// evictPrefetchEnv starts a manager whose failed prefetches are retried
// at once, and node n1 filling the operator's prefetch of t1 (1000
// bytes of 1 MB received), its fill reported preemptible: no viewer
// reads it.
func evictPrefetchEnv(t *testing.T) (*env, *simNode) {
	t.Helper()
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = 10*time.Millisecond, 10*time.Millisecond
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, preemptible: true})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n1.waitCommand(t, "prefetch t1", 1)
	n1.progress("t1", 1000)
	// The 1000 bytes, not only the state: the node reports the fill
	// (0 bytes) as soon as it takes the command, before its progress.
	waitFor(t, 10*time.Second, "the prefetch filling on n1, 1000 bytes received", func() bool {
		f := e.fill("n1", "t1")
		return f != nil && f.State == "filling" && f.StoredBytes == 1000
	})
	return e, n1
}

// `vodctl evict t1 --node n1` of the operator's prefetch under way that
// no viewer reads cancels it (OK, the answer says so): the node is sent
// the operator's eviction, which stops the fill and drops its bytes; the
// prefetch is then neither listed, retried nor ordered again (the reports
// after it, plans and all), and its stored order is gone, so that a
// restarted manager does not order it again either. It was refused
// FAILED_PRECONDITION ("evict it once complete").
func TestOperatorEvictCancelsPrefetchUnderWay(t *testing.T) {
	e, n1 := evictPrefetchEnv(t)
	ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "prefetch under way there (1000 of 1000000 bytes received) is cancelled") {
		t.Fatalf("vodctl evict of the prefetch under way: %v %v, want it cancelled", ack, err)
	}
	n1.waitCommand(t, "evict t1", 1)
	if n1.has("t1") {
		t.Fatal("t1 still on n1 after the operator's eviction of its prefetch")
	}
	// Reports without t1 and plans after them: a prefetch counted failed
	// would be retried within them (retry backoff 10 ms).
	prefetchCancelled(t, e, n1)
}

// The operator's eviction of a prefetch under way that a viewer reads is
// refused FAILED_PRECONDITION, saying why (an eviction never cuts a
// playing session): the node is sent no eviction, the prefetch goes on.
func TestOperatorEvictLeavesPrefetchAViewerReads(t *testing.T) {
	e, n1 := evictPrefetchEnv(t)
	n1.setPlaying("t1", 1)
	waitFor(t, 10*time.Second, "n1's report of t1 played", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"].titles["t1"].GetSessions() == 1
	})
	_, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "a prefetch a viewer reads is not cancelled: evict it once complete") {
		t.Fatalf("vodctl evict of a prefetch a viewer reads: %v, want FAILED_PRECONDITION saying why", err)
	}
	if n1.count("evict t1") != 0 || !n1.has("t1") {
		t.Fatalf("n1's commands %v, t1 on it %v: want no eviction sent, the prefetch going on", n1.commands(), n1.has("t1"))
	}
	if f := e.fill("n1", "t1"); f == nil || f.State != "filling" {
		t.Fatalf("fill after the refused eviction: %+v, want it filling", f)
	}
}

// A report the node sent before it had the operator's eviction, which
// still lists the prefetch filling, is not taken for the node keeping
// it (as one listing a copy is not): the prefetch stays cancelled, and
// its absence from the report after is not a failed fill to retry.
func TestOperatorEvictCancelBeforeTheNodeReport(t *testing.T) {
	e, n1 := evictPrefetchEnv(t)
	e.m.mu.Lock()
	ns := e.m.nodes["n1"]
	gen := ns.streamGen
	e.m.mu.Unlock()
	// n1's own reports stop: its stream broken, the manager takes no
	// more of them (it marks the node unreachable once its stream ended).
	n1.stop()
	waitFor(t, 10*time.Second, "n1's stream seen broken", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.sched.Node("n1").Unreachable
	})
	if ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil || !strings.Contains(ack.GetMessage(), "is cancelled") {
		t.Fatalf("vodctl evict of the prefetch under way: %v %v, want it cancelled", ack, err)
	}
	report := func(titles ...*pb.StoredTitle) {
		t.Helper()
		if err := e.m.report(ns, gen, &pb.LoadReport{NodeId: "n1", Titles: titles, DiskFreeBytes: 4_000_000}); err != nil {
			t.Fatal(err)
		}
	}
	report(&pb.StoredTitle{TitleId: "t1", SizeBytes: 1_000_000, StoredBytes: 2000, Filling: true, Prefetch: true, Preemptible: true})
	if f := e.fill("n1", "t1"); f != nil {
		t.Fatalf("vodctl fills after a report sent before the eviction: %+v, want the cancelled prefetch gone", f)
	}
	report() // the node's next, the fill cancelled
	e.m.kickPlan()
	if f := e.fill("n1", "t1"); f != nil {
		t.Fatalf("vodctl fills after the node's report without t1: %+v, want none", f)
	}
	if got := e.storageStats().GetFillsFailed(); got != 0 {
		t.Fatalf("fills failed %d, want none: the cancelled prefetch is no failure", got)
	}
}

// `vodctl evict t1 n1` right after `vodctl prefetch t1 n1`, the prefetch
// ordered and sent but not yet reported by the node (vodctl fills:
// ordered; the node is starting it), cancels it (OK, the answer says
// so): the node is sent the operator's eviction, which stops it there;
// the prefetch is not waited for (its order timeout would have failed it
// and had it retried), nor listed, ordered again or kept in the store.
// It was refused FAILED_PRECONDITION ("evict it once the node reports it
// filling"), and a script doing both exited 1.
func TestOperatorEvictCancelsPrefetchOrdered(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = 10*time.Millisecond, 10*time.Millisecond
		m.OrderTimeout = 100 * time.Millisecond
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, preemptible: true, before: func(n *simNode) { n.deaf = true }})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n1.waitCommand(t, "prefetch t1", 1)
	if f := e.fill("n1", "t1"); f == nil || f.State != "ordered" {
		t.Fatalf("fill before the eviction: %+v, want it ordered", f)
	}
	ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "its prefetch ordered there, not yet reported started by the node, is cancelled; not retried") {
		t.Fatalf("vodctl evict of the prefetch ordered: %v %v, want it cancelled", ack, err)
	}
	n1.waitCommand(t, "evict t1", 1)
	// Reports and plans past the order timeout (100 ms): a prefetch still
	// waited for would be failed by it and retried (backoff 10 ms).
	prefetchCancelled(t, e, n1)
	e.m.mu.Lock()
	free := e.m.nodes["n1"].diskFree
	e.m.mu.Unlock()
	if free != 5_000_000 {
		t.Fatalf("n1's free disk counted %d after the cancel, want all 5000000", free)
	}
}

// The operator's eviction of a prefetch ordered twice, sent to the node
// before its stream broke and queued again at its registration (the
// node's report did not list it yet: it was starting it), still sends
// the eviction: the queued copy is taken out, but the node has the first
// one, which it stops on the eviction. The eviction was dropped with the
// queued copy, and the node filled the whole title.
func TestOperatorEvictOfAPrefetchSentAgainReachesTheNode(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) { quietStorage(m); m.OrderTimeout = time.Minute })
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, preemptible: true, before: func(n *simNode) { n.deaf = true }})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n1.waitCommand(t, "prefetch t1", 1)      // delivered: the node is starting it
	e.registerWithoutStream(n1, 10*titleBps) // its stream breaks; it registers again, its new stream not open yet
	ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "not yet reported started by the node, is cancelled") {
		t.Fatalf("vodctl evict of the prefetch ordered: %v %v, want it cancelled", ack, err)
	}
	n1.heartbeat()
	n1.waitCommand(t, "evict t1", 1)
	if got := n1.count("prefetch t1"); got != 1 {
		t.Fatalf("t1 prefetched %d times on n1 (%v), want once: the copy queued again is not sent", got, n1.commands())
	}
}

// prefetchCancelled checks, over five reports of n1 and the plans after
// them, that the operator's cancelled prefetch of t1 there was sent once
// and is neither listed, tracked by the planner, stored, counted failed
// nor ordered again.
func prefetchCancelled(t *testing.T, e *env, n1 *simNode) {
	t.Helper()
	r0 := e.reports("n1")
	waitFor(t, 10*time.Second, "five reports of n1 after the eviction", func() bool {
		e.m.kickPlan()
		return e.reports("n1") >= r0+5
	})
	if got := n1.count("prefetch t1"); got != 1 {
		t.Fatalf("t1 prefetched %d times on n1 (%v), want once: the cancelled prefetch ordered again", got, n1.commands())
	}
	if f := e.fill("n1", "t1"); f != nil {
		t.Fatalf("vodctl fills lists the cancelled prefetch: %+v", f)
	}
	if st := e.repFill("n1", "t1"); st != "" {
		t.Fatalf("the planner's prefetch of t1 on n1 %s after its cancel, want none", st)
	}
	if o := storedOrders(t, e); len(o) != 0 {
		t.Fatalf("stored prefetch orders %+v after the cancel, want none", o)
	}
	if got := e.storageStats().GetFillsFailed(); got != 0 {
		t.Fatalf("fills failed %d, want none: the cancelled prefetch is no failure", got)
	}
}

// The operator's eviction of a prefetch whose command waits in a full
// command queue (the node's stream broken, its registration answered)
// takes that command out, which leaves room for the eviction: the node
// is never sent the prefetch, and is sent the eviction. It was refused
// RESOURCE_EXHAUSTED, the prefetch left to be sent.
func TestOperatorEvictOfAPrefetchQueuedInAFullQueue(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) { quietStorage(m); m.OrderTimeout = time.Minute })
	n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000, preemptible: true, before: func(n *simNode) { n.deaf = true }})
	e.registerWithoutStream(n1, 10*titleBps) // its stream breaks; it registers again, its new stream not open yet
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	e.fillQueue("n1")
	ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "not yet reported started by the node, is cancelled") {
		t.Fatalf("vodctl evict of the prefetch queued: %v %v, want it cancelled", ack, err)
	}
	n1.heartbeat()
	n1.waitCommand(t, "evict t1", 1)
	if got := n1.count("prefetch t1"); got != 0 {
		t.Fatalf("t1 prefetched %d times on n1 (%v), want never: its queued command was taken out", got, n1.commands())
	}
}
