package acm

import (
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// roomCheckEnv starts a manager with gdsf-classic and the Replicator and
// a node n1 with a full disk: p filling (its one fill slot), q, r and t2
// complete, q requested six times, r and t2 once.
func roomCheckEnv(t *testing.T) *env {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.Evictor, m.StoragePlanner = "gdsf-classic", smm.PlannerReplicate
	})
	complete := func(id string) *pb.StoredTitle {
		return &pb.StoredTitle{TitleId: id, SizeBytes: 1_000_000, StoredBytes: 1_000_000}
	}
	e.startSimNode("n1", storageTitles, simOpts{disk: 4_000_000,
		held: []*pb.StoredTitle{filling("p"), complete("q"), complete("r"), complete("t2")}})
	waitFor(t, 5*time.Second, "n1's report", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes["n1"]
		return ns != nil && ns.reported && ns.titles["t2"] != nil
	})
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	rec := e.m.storage.Evictor("n1").(smm.Recorder)
	for range 6 {
		rec.Record("q", 1_000_000, e.m.now())
	}
	rec.Record("r", 1_000_000, e.m.now())
	rec.Record("t2", 1_000_000, e.m.now())
	return e
}

// wantOrder checks n1's Evictor's order of its three complete titles
// (mu held): r and t2 (one request each) by title, then q.
func wantOrder(t *testing.T, e *env, after string) {
	t.Helper()
	v, ok := e.m.storage.Evictor("n1").Victims(e.m.itemsLocked(e.m.nodes["n1"], ""), 3_000_000, e.m.now())
	if !ok || !slices.Equal(v, []string{"r", "t2", "q"}) {
		t.Fatalf("victims after %s: %v %v, want [r t2 q] (q requested most, r and t2 by title)", after, v, ok)
	}
}

// An operator's prefetch queued on a full node checks that its room could
// be made without evicting anything (smm.CanFree). It asked the node's
// Evictor for Victims, which gdsf-classic takes as evictions: L rose to
// the victim's priority and its history went, so each prefetch queued
// reordered the disk (r, requested as often as t2, ranked above it).
func TestQueuedPrefetchRoomCheckKeepsTheEvictionHistory(t *testing.T) {
	e := roomCheckEnv(t)
	e.queueOn("n1", "t1") // p fills: queued, its room checked
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	wantOrder(t, e, "a queued prefetch")
}

// Room for a fill refused because the node's command queue is full asks
// the Evictor nothing: it evicts nothing, and gdsf-classic took the
// victims it was asked for as evicted.
func TestReclaimWithTheQueueFullKeepsTheEvictionHistory(t *testing.T) {
	e := roomCheckEnv(t)
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	ns := e.m.nodes["n1"]
	saved := ns.queue
	ns.queue = make([]*pb.NodeCommand, cmdQueue)
	_, err := e.m.reclaimLocked(ns, "t1", 1_000_000, e.m.now(), false, 0)
	ns.queue = saved
	if err == nil {
		t.Fatal("room made with the command queue full")
	}
	wantOrder(t, e, "a refusal for a full queue")
}
