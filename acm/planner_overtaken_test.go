package acm

import (
	"log/slog"
	"strings"
	"testing"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// A planner order the state has overtaken since the plan's view (the
// node already holds the title, the title to evict is playing, a viewer's
// fill took the room, the title to evict is gone) is logged at info: nothing failed and the next
// plan sees the state. Every such order was a WARN, several a minute on
// a busy cluster whose disks are full.
func TestPlannerOrderOvertakenIsNoWarning(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) { m.Logger = slog.New(slog.NewTextHandler(&log, nil)) })
	e.startNode("n1", nodeOpts{disk: 3_000_000, diskFree: 1,
		titles: []*pb.StoredTitle{
			{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
			{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		}})
	e.admitOne("t1") // t1 reserved for a viewer: not evictable
	e.admitOne("t2")
	e.m.mu.Lock()
	e.m.carryOutLocked([]smm.Action{
		{Kind: smm.Prefetch, Node: "n1", Title: "t1"}, // held there
		{Kind: smm.Evict, Node: "n1", Title: "t2"},    // playing there
		{Kind: smm.Prefetch, Node: "n1", Title: "t3"}, // no room: t1 and t2 in use
		{Kind: smm.Evict, Node: "n1", Title: "t3"},    // not there (evicted meanwhile)
	}, e.m.titles(), e.m.now())
	e.m.mu.Unlock()
	out := log.String()
	if n := strings.Count(out, "planner order overtaken"); n != 4 {
		t.Errorf("%d orders logged as overtaken, want 4:\n%s", n, out)
	}
	if strings.Contains(out, "level=WARN") {
		t.Errorf("an overtaken planner order warned of:\n%s", out)
	}
}
