package acm

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// staleT3 is t3 complete on a node's disk, of version v1 (the catalog of
// these tests has v2).
func staleT3() *pb.StoredTitle {
	return &pb.StoredTitle{TitleId: "t3", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v1"}
}

// registerBare registers node n on e without opening its heartbeat
// stream: the commands ordered for it wait in its queue.
func registerBare(t *testing.T, e *env, noOrigin bool, titles ...*pb.StoredTitle) {
	t.Helper()
	if _, err := e.nc.Register(context.Background(), &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001", NoOrigin: noOrigin, Titles: titles,
		Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
}

// queuedPrefetchesOf returns the titles of the prefetches waiting in
// node's command queue.
func (e *env) queuedPrefetchesOf(node string) []string {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	var out []string
	for _, c := range e.m.nodes[node].queue {
		if p := c.GetPrefetch(); p != nil {
			out = append(out, p.GetTitleId())
		}
	}
	return out
}

// fillsDone returns how many fills the Replicator counted completed.
func (e *env) fillsDone() int {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.rep.Stats().FillsDone
}

// orderPrefetchWhileAway registers node n without a heartbeat stream
// and orders the operator's prefetch of t3 there: it waits in the
// node's queue, its order stored.
func orderPrefetchWhileAway(t *testing.T, e *env) {
	t.Helper()
	registerBare(t, e, false)
	if ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil || strings.Contains(ack.GetMessage(), "queued") {
		t.Fatalf("prefetch of t3: %v %v, want it ordered", ack, err)
	}
	if q := e.queuedPrefetchesOf("n"); !slices.Equal(q, []string{"t3"}) {
		t.Fatalf("prefetches queued for n: %v, want t3", q)
	}
	waitFor(t, 5*time.Second, "the order stored", func() bool { return len(storedOrders(t, e)) == 1 })
}

// A prefetch queued while the node was away, for a title the node comes
// back holding without an origin as a stale copy (another version than
// the catalog's), is given up as one of a title it lacks: out of its
// queue, its stored order removed, "prefetch dropped" logged, and not
// counted a completed fill. The stale copy was taken for the prefetch's
// completion.
func TestQueuedPrefetchOfAStaleCopyDroppedWithoutOrigin(t *testing.T) {
	var log logtest.Buffer
	e := newManagerWith(t, "", versioned(testTitles, "v2"), func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	orderPrefetchWhileAway(t, e)

	registerBare(t, e, true, staleT3())
	if q := e.queuedPrefetchesOf("n"); len(q) != 0 {
		t.Fatalf("prefetches still queued for the node without an origin: %v", q)
	}
	e.m.mu.Lock()
	pending := len(e.m.nodes["n"].pending)
	e.m.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d prefetches still pending on the node without an origin", pending)
	}
	waitFor(t, 5*time.Second, "the order gone from the store", func() bool { return len(storedOrders(t, e)) == 0 })
	if !strings.Contains(log.String(), "prefetch dropped") || !strings.Contains(log.String(), "title=t3") {
		t.Errorf("no warning of the dropped prefetch of t3:\n%s", log.String())
	}
	if n := e.fillsDone(); n != 0 {
		t.Errorf("%d fills counted done: the stale copy taken for the prefetch's completion", n)
	}
	// The node keeps its stale copy (the best it has).
	if n := e.nodeInfo("n"); n.Titles != 1 {
		t.Errorf("the node without an origin has %d titles in the manager's view, want its stale copy", n.Titles)
	}
}

// A prefetch queued while the node was away, for a title the node comes
// back holding, with an origin, as a stale copy, is not completed by that
// copy: it stays ordered and its stored order kept, and once the copy is
// evicted as stale the prefetch goes to the node after the eviction, so
// that the node fetches the current version; only that version complete
// completes it. The stale copy completed it (the order forgotten), and
// the only prefetch the node had came before the eviction, when it still
// held the old copy (a prefetch of a title held does nothing).
func TestQueuedPrefetchOfAStaleCopySentAfterItsEviction(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v2"), nil)
	orderPrefetchWhileAway(t, e)
	startObedient(t, e).refilled(t, e)
}

// obedientNode is node n started with a stale copy of t3, carrying out
// its orders as vodnode does: an eviction removes the copy, a prefetch of
// a title it lacks fills it (the catalog's version, v2, at once).
type obedientNode struct {
	n   *fakeNode
	mu  sync.Mutex
	got []string // the commands for t3, in order: "evict", "prefetch"
}

func startObedient(t *testing.T, e *env) *obedientNode {
	t.Helper()
	o := &obedientNode{}
	started := make(chan struct{}) // o.n set: commands wait for it
	o.n = e.startNode("n", nodeOpts{rtsp: "127.0.0.1:7001", titles: []*pb.StoredTitle{staleT3()}, onCommand: func(c *pb.NodeCommand) {
		<-started
		n := o.n
		n.mu.Lock()
		defer n.mu.Unlock()
		o.mu.Lock()
		defer o.mu.Unlock()
		switch {
		case c.GetEvict().GetTitleId() == "t3":
			o.got = append(o.got, "evict")
			n.titles = slices.DeleteFunc(slices.Clone(n.titles), func(t *pb.StoredTitle) bool { return t.GetTitleId() == "t3" })
		case c.GetPrefetch().GetTitleId() == "t3":
			o.got = append(o.got, "prefetch")
			if !slices.ContainsFunc(n.titles, func(t *pb.StoredTitle) bool { return t.GetTitleId() == "t3" }) {
				n.titles = append(slices.Clone(n.titles), &pb.StoredTitle{TitleId: "t3", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v2"})
			}
		}
	}})
	close(started)
	return o
}

// refilled waits until o holds the current version of t3, filled by a
// prefetch after the stale copy's eviction, counted a completed fill,
// and the operator's order gone from the store.
func (o *obedientNode) refilled(t *testing.T, e *env) {
	t.Helper()
	waitFor(t, 5*time.Second, "the current version of t3 on the node", func() bool {
		o.n.mu.Lock()
		defer o.n.mu.Unlock()
		i := slices.IndexFunc(o.n.titles, func(t *pb.StoredTitle) bool { return t.GetTitleId() == "t3" })
		return i >= 0 && o.n.titles[i].GetVersion() == "v2"
	})
	o.mu.Lock()
	order := slices.Clone(o.got)
	o.mu.Unlock()
	if i := slices.Index(order, "evict"); i < 0 || !slices.Contains(order[i:], "prefetch") {
		t.Fatalf("commands for t3: %v, want a prefetch after the stale copy's eviction", order)
	}
	waitFor(t, 5*time.Second, "the prefetch counted done with the current version", func() bool { return e.fillsDone() == 1 })
	waitFor(t, 5*time.Second, "the order gone from the store", func() bool { return len(storedOrders(t, e)) == 0 })
}

// An operator's prefetch stored by a manager, whose node (with an origin)
// comes back to the restarted manager holding the title as a stale copy,
// is not taken as carried out by that copy: once the copy is evicted as
// stale the order is queued again and the node fills the current version.
// The restarted manager saw the copy before a catalog read confirmed it
// stale, took the order as carried out and removed it: the node ended
// with no copy of the title.
func TestStoredPrefetchOfAStaleCopyRestoredAfterItsEviction(t *testing.T) {
	dir := t.TempDir()
	e := newManagerWith(t, dir, versioned(testTitles, "v2"), nil)
	orderPrefetchWhileAway(t, e)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := newManagerWith(t, dir, versioned(testTitles, "v2"), func(m *Manager) { m.PlanInterval = 100 * time.Millisecond })
	startObedient(t, e2).refilled(t, e2)
}

// An operator's prefetch stored by a manager, whose node comes back to the
// restarted manager without an origin holding the title as a stale copy,
// is dropped as one of a title it lacks ("operator's prefetch dropped"
// logged), not taken as carried out by the stale copy.
func TestStoredPrefetchOfAStaleCopyDroppedWithoutOrigin(t *testing.T) {
	dir := t.TempDir()
	e := newManagerWith(t, dir, versioned(testTitles, "v2"), nil)
	orderPrefetchWhileAway(t, e)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	var log logtest.Buffer
	e2 := newManagerWith(t, dir, versioned(testTitles, "v2"), func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	registerBare(t, e2, true, staleT3())
	waitFor(t, 5*time.Second, "the order gone from the store", func() bool { return len(storedOrders(t, e2)) == 0 })
	if !strings.Contains(log.String(), "operator's prefetch dropped") || !strings.Contains(log.String(), "title=t3") {
		t.Errorf("no warning of the dropped prefetch of t3:\n%s", log.String())
	}
}
