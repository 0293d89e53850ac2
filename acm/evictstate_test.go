package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestEvictionOfADownNodeOutlivesARestart: the operator's eviction of a
// title on a node that is down waits for the node; a manager restarted
// meanwhile orders it at the node's registration (the queue that held it
// was lost with the manager, and the node came back with the title for
// good). Without a restart the queued command carries it out, once.
func TestEvictionOfADownNodeOutlivesARestart(t *testing.T) {
	ctx := context.Background()
	held := simOpts{held: []*pb.StoredTitle{stored("t1"), stored("t2")}}
	for _, restart := range []bool{true, false} {
		dir := t.TempDir()
		e := newManagerWith(t, dir, unhinted(), quietStorage)
		n := e.startSimNode("n1", storageTitles, held)
		n.leave()
		waitFor(t, 5*time.Second, "n1 down", func() bool { return !e.nodeInfo("n1").Alive })
		ack, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"})
		if err != nil || !strings.Contains(ack.GetMessage(), "node n1 is down: carried out when it is back") {
			t.Fatalf("evict on a down node: %v %v", ack, err)
		}
		if restart {
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			e = newManagerWith(t, dir, unhinted(), quietStorage)
		}
		back := e.startSimNode("n1", storageTitles, held)
		back.waitCommand(t, "evict t2", 1)
		reports := e.reports("n1")
		waitFor(t, 5*time.Second, "two more reports of n1", func() bool { return e.reports("n1") >= reports+2 })
		if got := back.count("evict t2"); got != 1 || back.has("t2") || !back.has("t1") {
			t.Fatalf("restart %v: n1 back got %v (holds t1 %v, t2 %v), want t2 evicted once, t1 kept", restart, back.commands(), back.has("t1"), back.has("t2"))
		}
		e.m.orderWrites.Wait() // the stored order's removal
		if orders, err := e.m.readEvictOrders(ctx, true); err != nil || len(orders) != 0 {
			t.Fatalf("restart %v: stored eviction orders %v (%v) once carried out, want none", restart, orders, err)
		}
	}
}

// TestStandbyDoesNotCarryOutEvictionOrders: an eviction order carried out
// by the active manager (and removed from the shared store) is not
// carried out again by a standby the node registers with later: the
// standby's orders, read at its start, are read again only when it takes
// over; it evicted the title, which the node held again, a second time.
func TestStandbyDoesNotCarryOutEvictionOrders(t *testing.T) {
	ctx := context.Background()
	open, _ := sharedRedis(t)
	conf := func(m *Manager) { onShared(open(), nil, time.Minute)(m); quietStorage(m) }
	held := simOpts{held: []*pb.StoredTitle{stored("t1"), stored("t2")}}
	a := newManagerWith(t, "", unhinted(), conf)
	n := a.startSimNode("n1", storageTitles, held)
	n.leave()
	waitFor(t, 5*time.Second, "n1 down", func() bool { return !a.nodeInfo("n1").Alive })
	if ack, err := a.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil || !strings.Contains(ack.GetMessage(), "is down") {
		t.Fatalf("evict: %v %v", ack, err)
	}
	b := newManagerWith(t, "", unhinted(), conf) // a standby started now: it reads the order
	if b.m.Leader() || !a.m.Leader() {
		t.Fatal("want a the active manager, b the standby")
	}
	back := a.startSimNode("n1", storageTitles, held)
	back.waitCommand(t, "evict t2", 1)
	r := a.reports("n1")
	waitFor(t, 5*time.Second, "two more reports of n1", func() bool { return a.reports("n1") >= r+2 })
	a.m.orderWrites.Wait()
	if o, err := a.m.readEvictOrders(ctx, true); err != nil || len(o) != 0 {
		t.Fatalf("stored orders once the active manager carried them out: %v %v", o, err)
	}
	back.leave() // t2 is back on its disk; n1 registers with the standby
	again := b.startSimNode("n1", storageTitles, held)
	r = b.reports("n1")
	waitFor(t, 5*time.Second, "three reports of n1 to the standby", func() bool { return b.reports("n1") >= r+3 })
	if again.count("evict t2") != 0 {
		t.Fatalf("the standby evicted t2 from an order carried out and removed: %v", again.commands())
	}
}

// TestEvictionOrderSettledByReports: a node declared dead that comes back
// by its heartbeats alone (a stall, no registration) takes the queued
// eviction, and the order is settled by its report without the title:
// the operator who then prefetches the title there again does not see it
// evicted at the node's next registration. It stayed stored (6 h) and
// was carried out again.
func TestEvictionOrderSettledByReports(t *testing.T) {
	ctx := context.Background()
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.Scheduler.HeartbeatInterval = 100 * time.Millisecond
	})
	held := simOpts{held: []*pb.StoredTitle{stored("t1"), stored("t2")}}
	n := e.startSimNode("n1", storageTitles, held)
	n.mute(true)
	waitFor(t, 5*time.Second, "n1 down", func() bool { return !e.nodeInfo("n1").Alive })
	if ack, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil || !strings.Contains(ack.GetMessage(), "is down") {
		t.Fatalf("evict: %v %v", ack, err)
	}
	n.mute(false)
	n.waitCommand(t, "evict t2", 1)
	waitFor(t, 5*time.Second, "the order settled", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return len(e.m.evictOrders["n1"]) == 0
	})
	e.m.orderWrites.Wait()
	if o, err := e.m.readEvictOrders(ctx, true); err != nil || len(o) != 0 {
		t.Fatalf("stored orders once carried out: %v %v", o, err)
	}
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatalf("prefetch: %v", err)
	}
	n.waitCommand(t, "prefetch t2", 1)
	n.complete("t2")
	waitFor(t, 5*time.Second, "t2 complete on n1", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		st := e.m.nodes["n1"].titles["t2"]
		return st != nil && !st.GetFilling()
	})
	n.stop()
	back := e.startSimNode("n1", storageTitles, held)
	r := e.reports("n1")
	waitFor(t, 5*time.Second, "three reports of n1", func() bool { return e.reports("n1") >= r+3 })
	if back.count("evict t2") != 0 {
		t.Fatalf("t2, prefetched again by the operator, evicted again at the next registration: %v", back.commands())
	}
}

// TestPinCancelsAWaitingEviction: a pin to the node of a title whose
// eviction there waits for the node (down when ordered) cancels the
// eviction, and says so: a manager restarted meanwhile does not try it
// at the node's registration (it was refused there for the pin, and the
// warning told the operator to unpin it).
func TestPinCancelsAWaitingEviction(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	held := simOpts{held: []*pb.StoredTitle{stored("t1"), stored("t2")}}
	e := newManagerWith(t, dir, unhinted(), quietStorage)
	e.startSimNode("n1", storageTitles, held).leave()
	waitFor(t, 5*time.Second, "n1 down", func() bool { return !e.nodeInfo("n1").Alive })
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	ack, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "the eviction of it ordered there while the node was down is cancelled") {
		t.Fatalf("pin: %v %v", ack, err)
	}
	e.m.orderWrites.Wait()
	if o, err := e.m.readEvictOrders(ctx, true); err != nil || len(o) != 0 {
		t.Fatalf("stored eviction orders after the pin: %v %v", o, err)
	}
}
