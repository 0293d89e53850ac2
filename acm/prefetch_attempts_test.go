package acm

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestOperatorPrefetchFailuresOutliveARestart: the failures of an
// operator's prefetch are stored with its order (Badger, the manager's
// own store), and a restarted manager that queues the order again counts
// on from them: the next failure's backoff is the one after them, and
// the order is given up after smm.MaxHandRetries failures in all. A
// restarted manager counted from 0, so each restart gave the order a new
// run of retries from the first backoff. An entry stored without the
// count (an older manager's) still loads, at 0.
func TestOperatorPrefetchFailuresOutliveARestart(t *testing.T) {
	dir := t.TempDir()
	conf := func(m *Manager) {
		fastStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Hour, time.Hour // no retry before the restart
	}
	e := newManagerWith(t, dir, storageTitles, conf)
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000, before: func(n *simNode) { n.failing = true }})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.waitCommand(t, "prefetch t1", 1)
	waitFor(t, 5*time.Second, "the failure counted in the stored order", func() bool {
		o := storedOrders(t, e)
		return len(o) == 1 && o[0].Title == "t1" && o[0].Attempts == 1
	})
	n.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newManagerWith(t, dir, storageTitles, conf)
	e2.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	waitFor(t, 5*time.Second, "t1's restored prefetch listed", func() bool { return e2.fill("n1", "t1") != nil })
	if f := e2.fill("n1", "t1"); f.GetAttempts() != 1 {
		t.Fatalf("restored prefetch %+v, want its 1 failure kept", f)
	}
	// An order stored before the count was (an older manager's entry,
	// without "attempts"): loaded and queued again, at 0.
	old := fmt.Sprintf(`[{"node":"n1","title":"t2","at":%q}]`, time.Now().UTC().Format(time.RFC3339Nano))
	if err := e2.m.st.PutState(context.Background(), statePrefetches, []byte(old)); err != nil {
		t.Fatal(err)
	}
	if err := e2.m.Close(); err != nil {
		t.Fatal(err)
	}
	e3 := newManagerWith(t, dir, storageTitles, conf)
	e3.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000})
	waitFor(t, 5*time.Second, "t2's restored prefetch listed", func() bool { return e3.fill("n1", "t2") != nil })
	if f := e3.fill("n1", "t2"); f.GetAttempts() != 0 {
		t.Fatalf("restored prefetch of an older entry %+v, want 0 failures", f)
	}
}

// A failure count whose write waited for opMu while the operator's order
// was cancelled and given again (a new order, at 0) is not written onto
// the new order: a restart would give it up after fewer failures.
func TestStaleFailureCountNotWrittenOnANewOrder(t *testing.T) {
	e := newManagerWith(t, t.TempDir(), storageTitles, fastStorage)
	given := fmt.Sprintf(`[{"node":"n1","title":"t1","at":%q}]`, time.Now().UTC().Format(time.RFC3339Nano))
	if err := e.m.st.PutState(context.Background(), statePrefetches, []byte(given)); err != nil {
		t.Fatal(err)
	}
	// The count of the order before, 3 failures; the Replicator tracks
	// none now (the new order not failed yet).
	e.m.saveAttemptsLater("n1", "t1", 3)
	e.m.orderWrites.Wait()
	if o := storedOrders(t, e); len(o) != 1 || o[0].Attempts != 0 {
		t.Fatalf("stored orders %+v, want the new order's 0 failures", o)
	}
}
