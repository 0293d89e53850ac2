package acm

import (
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// An operator's prefetch without a node, with no Replicator, goes to the
// node with the most free disk it measured: a node that reports its free
// disk unknown (-1, counted as unknownDiskFree) does not win by that;
// among such nodes the one with the most budget left (disk_bytes less
// the bytes stored) does.
func TestChooseNodePrefersMeasuredFreeDisk(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.StoragePlanner = smm.PlannerNone })
	if e.m.rep != nil {
		t.Fatal("the test needs a planner without a Replicator")
	}
	held := []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}
	e.startNode("n1", nodeOpts{diskFree: -1, disk: 2_000_000_000})
	e.startNode("n2", nodeOpts{diskFree: 500_000_000, titles: held})
	e.startNode("n3", nodeOpts{diskFree: -1, disk: 1 << 40})
	for _, id := range []string{"n1", "n2", "n3"} {
		e.awaitReports(id)
	}
	choose := func(title string) string {
		t.Helper()
		tt, ok := e.m.titles()[title]
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		if !ok {
			t.Fatalf("title %s not in the catalog", title)
		}
		id, err := e.m.chooseNodeLocked(tt, e.m.now())
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		return id
	}
	if got := choose("t2"); got != "n2" {
		t.Errorf("t2 on %s, want n2 (its free disk measured, the others' unknown)", got)
	}
	if got := choose("t1"); got != "n3" {
		t.Errorf("t1 (held by n2) on %s, want n3 (the most budget left of the nodes whose free disk is unknown)", got)
	}
}
