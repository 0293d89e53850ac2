package acm

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "vodcluster/proto/vodcluster/v1"
)

// versioned returns copies of titles, each of version v.
func versioned(titles []*pb.Title, v string) []*pb.Title {
	out := make([]*pb.Title, len(titles))
	for i, ti := range titles {
		out[i] = proto.CloneOf(ti)
		out[i].Version = v
	}
	return out
}

// evictions returns the titles of the evictions among the commands n has
// received so far (without waiting).
func (n *fakeNode) evictions() []string {
	var out []string
	for {
		select {
		case c := <-n.cmds:
			if ev := c.GetEvict(); ev != nil {
				out = append(out, ev.GetTitleId())
			}
		default:
			return out
		}
	}
}

// A title replaced at the origin (the catalog has version v2) leaves stale
// copies on nodes: n1's copy of t1 is v1 and a viewer plays it. The
// manager sends new viewers of t1 elsewhere (a fill of v2 on n2) and
// leaves the playing copy alone; once its session has ended the copy is
// evicted. A copy of the catalog's version (t2) and one whose version the
// node does not know but whose size is the catalog's (t3) are not stale;
// one of another size without a version (adult-1) is, and is evicted at
// once as no one plays it (once the catalog read again, at the manager's
// first sight of the copies, confirms it).
func TestStaleCopyDrainsThenIsEvicted(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v2"), nil)
	held := func(sessions int32) []*pb.StoredTitle {
		return []*pb.StoredTitle{
			{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v1", Sessions: sessions},
			{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v2"},
			{TitleId: "t3", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		}
	}
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 20 * titleBps, titles: append(held(1),
		&pb.StoredTitle{TitleId: "adult-1", SizeBytes: 1_000_000, StoredBytes: 1_000_000})})
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", egress: 10 * titleBps})
	e.nextReport("n1")
	e.nextReport("n1")

	waitFor(t, 5*time.Second, "the eviction of adult-1, stale and idle", func() bool {
		n1.mu.Lock()
		defer n1.mu.Unlock()
		ev := n1.evictions()
		for _, id := range ev {
			if id != "adult-1" {
				t.Fatalf("%s evicted, want adult-1 only", id)
			}
		}
		if len(ev) == 0 {
			return false
		}
		n1.titles = held(1) // the node carries out the order
		return true
	})
	// adult-1 and t1 were seen stale at once: t1's copy is stale too now.
	e.nextReport("n1")
	e.tokenOf(e.describe("demo", "demo", "t1").Header["Location"][0], "rtsp", "127.0.0.1:7002", "t1", "")
	e.tokenOf(e.describe("demo", "demo", "t2").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t2", "")
	e.tokenOf(e.describe("demo", "demo", "t3").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t3", "")

	e.nextReport("n1")
	e.nextReport("n1")
	if ev := n1.evictions(); len(ev) > 0 {
		t.Fatalf("evicted %v while t1's stale copy plays; want nothing", ev)
	}
	// The operator sees which copy is stale (vodctl placement).
	for _, r := range e.placement("n1").GetReplicas() {
		if want := r.GetTitleId() == "t1"; r.GetStale() != want {
			t.Errorf("placement of %s on n1: stale %v (version %q), want %v", r.GetTitleId(), r.GetStale(), r.GetVersion(), want)
		}
		if r.GetTitleId() == "t1" && r.GetVersion() != "v1" {
			t.Errorf("placement of t1 on n1: version %q, want the copy's v1", r.GetVersion())
		}
	}

	// t1's viewer leaves: its stale copy goes.
	n1.mu.Lock()
	n1.titles = held(0)
	n1.mu.Unlock()
	waitFor(t, 5*time.Second, "the eviction of t1's stale copy once unused", func() bool {
		ev := n1.evictions()
		for _, id := range ev {
			if id != "t1" {
				t.Fatalf("%s evicted, want t1", id)
			}
		}
		return len(ev) > 0
	})
}

// While the origin is down a stale copy is the best the cluster has: it
// is kept and played (no fill could start); once the origin is back it
// is evicted.
func TestStaleCopyKeptWhileTheOriginIsDown(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OriginCheck = 50 * time.Millisecond })
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor(t, 5*time.Second, "the origin seen down", func() bool { return e.m.originDown.Load() })
	n := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 999_000, StoredBytes: 999_000}}})
	e.nextReport("n1")
	e.nextReport("n1")
	if ev := n.evictions(); len(ev) > 0 {
		t.Fatalf("evicted %v with the origin down", ev)
	}
	sid := e.admitOne("t1")
	if s := e.session(sid); s.GetNodeId() != "n1" {
		t.Fatalf("the viewer of t1 with the origin down: %+v, want on n1", s)
	}
	for _, k := range []pb.SessionEvent_Kind{pb.SessionEvent_KIND_STARTED, pb.SessionEvent_KIND_ENDED} {
		if err := n.event(sid, k); err != nil {
			t.Fatal(err)
		}
	}
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	waitFor(t, 5*time.Second, "the stale copy evicted once the origin is back", func() bool {
		return slices.Contains(n.evictions(), "t1")
	})
}

// The origin replaced t1 (v1 -> v2) and a node filled the new version
// (it asks the origin before each fill) before the manager read the
// catalog again: the node's copy is of a version the manager's catalog
// does not have yet. It is the origin's current version, not a stale
// copy: it must not be evicted (then filled again, evicted again, until
// the next catalog_refresh), nor passed over by viewers.
func TestCopyNewerThanTheManagersCatalogIsKept(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v1"), nil)
	e.setOriginVersion("t1", "v2")
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 20 * titleBps, titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Version: "v2"},
	}})
	// The copy's version makes the manager read the catalog at once,
	// not at the next catalog_refresh (1 min).
	waitFor(t, 5*time.Second, "the manager's catalog with t1 v2", func() bool {
		return e.m.titles()["t1"].Version == "v2"
	})
	for range 3 {
		e.nextReport("n1")
	}
	if ev := n1.evictions(); len(ev) > 0 {
		t.Fatalf("evicted %v, the origin's current version of t1; want nothing", ev)
	}
	if sid := e.admitOne("t1"); e.session(sid).GetNodeId() != "n1" {
		t.Fatalf("the viewer of t1: %+v, want on n1 (its copy is current)", e.session(sid))
	}
}

// A fill of t1's old version (v1) that a node began before the file was
// replaced at the origin (the catalog now has v2): a new viewer of t1 is
// sent to another node (a fill of v2), not to the fill of v1, where it
// would play the old version; the fill is not evicted while it runs.
// A fill of the catalog's version takes new viewers.
func TestFillOfTheOldVersionTakesNoNewViewer(t *testing.T) {
	e := newManagerWith(t, "", versioned(testTitles, "v2"), nil)
	n1 := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001", egress: 20 * titleBps, titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 500_000, Filling: true, Version: "v1", Sessions: 1},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 500_000, Filling: true, Version: "v2", Sessions: 1},
	}})
	e.startNode("n2", nodeOpts{rtsp: "127.0.0.1:7002", egress: 20 * titleBps})
	// The first sight of the disagreeing fill asks for a catalog read,
	// which must confirm it.
	waitFor(t, 5*time.Second, "the fill of t1 v1 seen stale", func() bool {
		e.nextReport("n1")
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		s := e.m.nodes["n1"].stale["t1"]
		return s != nil && e.m.catalogGen.Load() > s.gen
	})
	e.nextReport("n1")
	e.tokenOf(e.describe("demo", "demo", "t1").Header["Location"][0], "rtsp", "127.0.0.1:7002", "t1", "")
	e.tokenOf(e.describe("demo", "demo", "t2").Header["Location"][0], "rtsp", "127.0.0.1:7001", "t2", "")
	if ev := n1.evictions(); len(ev) > 0 {
		t.Fatalf("evicted %v while filling; want nothing", ev)
	}
	// The operator sees the fill of t1 as stale (vodctl placement).
	for _, r := range e.placement("n1").GetReplicas() {
		if want := r.GetTitleId() == "t1"; r.GetStale() != want || !r.GetFilling() {
			t.Errorf("placement of %s on n1: stale %v filling %v, want stale %v, filling", r.GetTitleId(), r.GetStale(), r.GetFilling(), want)
		}
	}
}

// A title withdrawn at the origin whose copy a node still holds is listed
// by a placement filtered on it (the operator finds it to evict it); a
// title neither in the catalog nor on a node is NOT_FOUND.
func TestPlacementOfAWithdrawnTitle(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "gone", SizeBytes: 1_000_000, StoredBytes: 1_000_000}}})
	r, err := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{TitleId: "gone"})
	if err != nil || len(r.GetReplicas()) != 1 || r.GetReplicas()[0].GetNodeId() != "n1" {
		t.Fatalf("placement of a withdrawn title n1 holds: %v %v", r, err)
	}
	if _, err := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{TitleId: "never"}); status.Code(err) != codes.NotFound {
		t.Fatalf("placement of an unknown title: %v, want NOT_FOUND", err)
	}
}
