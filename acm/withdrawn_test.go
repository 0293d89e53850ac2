package acm

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// A node's copy of a title withdrawn at the origin (not in the catalog)
// is evicted withdrawn_grace after the manager first saw it, once a
// catalog read from the origin after that sight confirms it gone, and
// once no one plays it: the title is refused at the front door, and its
// copy held the node's disk for good (a title taken down stayed on every
// node that had it). Copies of catalog titles are left alone.
func TestWithdrawnTitleEvictedAfterItsGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	e := newManager(t, "", func(m *Manager) { m.WithdrawnGrace = grace })
	held := func(playing int32) []*pb.StoredTitle {
		return []*pb.StoredTitle{
			{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
			{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
			{TitleId: "t3", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
			{TitleId: "gone", SizeBytes: 1_000_000, StoredBytes: 1_000_000},
			{TitleId: "gone-playing", SizeBytes: 1_000_000, StoredBytes: 1_000_000, Sessions: playing},
		}
	}
	n1 := e.startNode("n1", nodeOpts{titles: held(1)})
	e.nextReport("n1")
	seen := time.Now()
	// The grace passes with no catalog read since the first sight: the
	// manager's catalog may be older than the node's copy.
	for time.Since(seen) < 2*grace {
		e.nextReport("n1")
	}
	if ev := n1.evictions(); len(ev) > 0 {
		t.Fatalf("evicted %v before a catalog read confirmed the titles withdrawn", ev)
	}
	if err := e.m.refreshCatalog(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the eviction of gone", func() bool {
		n1.mu.Lock()
		defer n1.mu.Unlock()
		ev := n1.evictions()
		if len(ev) > 0 && !slices.Equal(ev, []string{"gone"}) {
			t.Fatalf("evicted %v, want gone alone (gone-playing plays, t1-t3 are in the catalog)", ev)
		}
		if len(ev) == 0 {
			return false
		}
		n1.titles = slices.DeleteFunc(held(1), func(s *pb.StoredTitle) bool { return s.GetTitleId() == "gone" })
		return true
	})
	e.nextReport("n1")
	e.nextReport("n1")
	if ev := n1.evictions(); len(ev) > 0 {
		t.Fatalf("evicted %v while gone-playing plays", ev)
	}
	n1.mu.Lock()
	n1.titles = slices.DeleteFunc(held(0), func(s *pb.StoredTitle) bool { return s.GetTitleId() == "gone" })
	n1.mu.Unlock()
	// A report alike but for its sessions may be a steady one, not applied
	// in full (reportsteady.go); the next catalog read makes the next one
	// full (at most catalog_refresh later).
	if err := e.m.refreshCatalog(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the eviction of gone-playing once its viewer left", func() bool {
		ev := n1.evictions()
		if len(ev) > 0 && !slices.Equal(ev, []string{"gone-playing"}) {
			t.Fatalf("evicted %v, want gone-playing alone", ev)
		}
		return len(ev) > 0
	})
}

// With withdrawn_grace < 0 a withdrawn title's copy is never evicted for
// that.
func TestWithdrawnTitleKept(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.WithdrawnGrace = -1 })
	n1 := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "gone", SizeBytes: 1_000_000, StoredBytes: 1_000_000}}})
	if ev := evictedAfterACatalogRead(t, e, n1); len(ev) > 0 {
		t.Fatalf("evicted %v with withdrawn_grace -1", ev)
	}
}

// A node most of whose copies are of titles the catalog lacks keeps them
// all, and the manager says so: an origin whose title directory was not
// mounted serves a catalog without them, and evicting them would empty
// the node's disk (the reviewer's 4 of 4 copies evicted for an empty
// catalog).
func TestWithdrawnMostOfANodeKept(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.WithdrawnGrace = time.Millisecond
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	n1 := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		{TitleId: "gone-1", SizeBytes: 1_000_000, StoredBytes: 1_000_000},
		{TitleId: "gone-2", SizeBytes: 1_000_000, StoredBytes: 1_000_000},
	}})
	if ev := evictedAfterACatalogRead(t, e, n1); len(ev) > 0 {
		t.Fatalf("evicted %v, two of the node's three copies not in the catalog", ev)
	}
	if !strings.Contains(log.String(), "most of the node's copies are of titles not in the origin's catalog") {
		t.Fatalf("no error logged:\n%s", log.String())
	}
}

// evictedAfterACatalogRead returns the evictions n1 was sent by two
// reports after a catalog read that followed its first report (one that
// confirms its copies of titles not in the catalog as withdrawn).
func evictedAfterACatalogRead(t *testing.T, e *env, n1 *fakeNode) []string {
	t.Helper()
	e.nextReport("n1")
	if err := e.m.refreshCatalog(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	e.nextReport("n1")
	e.nextReport("n1")
	return n1.evictions()
}
