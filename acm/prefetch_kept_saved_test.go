package acm

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// keptQuiet is quietStorage with no periodic popularity save within a
// test: only the save a keep's start asks for writes the snapshot.
func keptQuiet(m *Manager) {
	quietStorage(m)
	m.PopularitySave = time.Hour
}

// TestOperatorPrefetchKeptOverARestart: the keep of the copy an
// operator's prefetch filled is saved when the fill completes, not at the
// next PopularitySave (an hour here): a manager restarted right after
// (killed: no save at its Close) still keeps the copy, and lists it kept
// until the hour's end. It was lost with the manager, and the copy was
// the next room made on the node.
func TestOperatorPrefetchKeptOverARestart(t *testing.T) {
	dir := t.TempDir()
	e := newManagerWith(t, dir, unhinted(), keptQuiet)
	until := keptFill(t, e, e.startSimNode("n1", storageTitles, simOpts{}))
	killManager(t, e)

	b := newManagerWith(t, dir, unhinted(), keptQuiet)
	if got := b.keptUntil("n1", "t1"); !got.Equal(until) {
		t.Fatalf("restarted: t1 on n1 kept until %v, want until %v", got, until)
	}
	b.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1"), stored("q")}})
	waitFor(t, 5*time.Second, "n1's report to the restarted manager", func() bool {
		b.m.mu.Lock()
		defer b.m.mu.Unlock()
		ns := b.m.nodes["n1"]
		return ns != nil && ns.reported
	})
	lp, err := b.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range lp.GetReplicas() {
		want := int64(0)
		if r.GetTitleId() == "t1" {
			want = until.UnixMilli()
		}
		if r.GetKeptUntilUnixMs() != want {
			t.Fatalf("restarted: ListPlacement has %s kept until %d, want %d", r.GetTitleId(), r.GetKeptUntilUnixMs(), want)
		}
	}
}

// TestOperatorPrefetchKeptOverATakeover: as over a restart, the standby
// that takes over right after the fill completes (the active manager
// killed) keeps the copy: the active manager saved the keep at once.
func TestOperatorPrefetchKeptOverATakeover(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, unhinted(), keptQuiet)
	until := keptFill(t, a, a.startSimNode("n1", storageTitles, simOpts{}))
	if !b.keptUntil("n1", "t1").IsZero() {
		t.Fatal("the standby keeps t1 before taking over")
	}
	killManager(t, a)
	waitFor(t, 20*testLeaderTTL, "b to take over", b.m.Leader)
	if got := b.keptUntil("n1", "t1"); !got.Equal(until) {
		t.Fatalf("taken over: t1 on n1 kept until %v, want until %v", got, until)
	}
}

// TestOperatorEvictionEndsTheKeepOverARestart: the operator's eviction
// of a kept copy ends its keep, and a restart right after does not bring
// it back: the snapshot saved when the keep started still holds it (no
// save since), but the eviction's hold, saved at once, outlasts it, and
// a held copy is not kept.
func TestOperatorEvictionEndsTheKeepOverARestart(t *testing.T) {
	dir := t.TempDir()
	e := newManagerWith(t, dir, unhinted(), keptQuiet)
	n := e.startSimNode("n1", storageTitles, simOpts{})
	keptFill(t, e, n)
	if ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil || !strings.HasPrefix(ack.GetMessage(), "eviction ordered") {
		t.Fatalf("evict t1: %v %v", ack, err)
	}
	n.waitCommand(t, "evict t1", 1)
	if !e.keptUntil("n1", "t1").IsZero() {
		t.Fatal("t1 kept after the operator evicted it")
	}
	if !slices.ContainsFunc(e.storedKeeps(), func(h smm.Hold) bool { return h.Node == "n1" && h.Title == "t1" }) {
		t.Fatal("the stored snapshot lost t1's keep: want the keep saved before the eviction, and no save since")
	}
	killManager(t, e)

	b := newManagerWith(t, dir, unhinted(), keptQuiet)
	if !b.keptUntil("n1", "t1").IsZero() {
		t.Fatal("restarted: t1 kept again, which the operator evicted")
	}
	b.m.mu.Lock()
	keeps, held := b.m.rep.Keeps(b.m.now()), b.m.rep.Held("n1", "t1", b.m.now())
	b.m.mu.Unlock()
	if len(keeps) != 0 || !held {
		t.Fatalf("restarted: keeps %v, t1 held %v; want none kept, t1 held", keeps, held)
	}
}

// keptFill orders the operator's prefetch of t1 on n, completes its
// fill and waits until the keep it starts is in e's stored popularity
// snapshot. It returns the keep's end.
func keptFill(t *testing.T, e *env, n *simNode) time.Time {
	t.Helper()
	waitFor(t, 5*time.Second, "n1's report", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes[n.id]
		return ns != nil && ns.reported
	})
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: n.id})
	if err != nil || !strings.HasPrefix(ack.GetMessage(), "prefetch ordered") {
		t.Fatalf("prefetch of t1: %v %v, want it ordered", ack, err)
	}
	n.waitCommand(t, "prefetch t1", 1)
	n.complete("t1")
	var until time.Time
	waitFor(t, 5*time.Second, "t1's keep in the stored snapshot", func() bool {
		for _, h := range e.storedKeeps() {
			if h.Node == n.id && h.Title == "t1" {
				until = h.Until
				return true
			}
		}
		return false
	})
	if got := e.keptUntil(n.id, "t1"); !got.Equal(until) || until.Before(e.m.now().Add(59*time.Minute)) {
		t.Fatalf("t1 kept until %v, stored until %v: want both an hour from the fill", got, until)
	}
	return until
}

// keptUntil is the end of the keep of node's copy of title in e's
// Replicator, zero when it is not kept.
func (e *env) keptUntil(node, title string) time.Time {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	until, _ := e.m.rep.KeptUntil(node, title, e.m.now())
	return until
}

// storedKeeps returns the keeps of e's stored popularity snapshot, none
// when there is none.
func (e *env) storedKeeps() []smm.Hold {
	e.t.Helper()
	b, err := e.m.st.State(context.Background(), statePopularity)
	if err != nil {
		return nil
	}
	var p savedPopularity
	if err := json.Unmarshal(b, &p); err != nil {
		e.t.Fatal(err)
	}
	return p.State.Kept
}
