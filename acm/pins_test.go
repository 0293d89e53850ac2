package acm

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

func (e *env) placement(node string) *pb.ListPlacementResponse {
	e.t.Helper()
	r, err := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{NodeId: node})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func pinnedOn(pl *pb.ListPlacementResponse, node string) map[string]bool {
	out := map[string]bool{}
	for _, r := range pl.Replicas {
		if r.NodeId == node {
			out[r.TitleId] = r.Pinned
		}
	}
	return out
}

// TestPinsPersistAndProtect: pins to a node and to the cluster show in
// the placement, refuse evictions, survive a manager restart, and go with
// Unpin; bad requests get the right codes.
func TestPinsPersistAndProtect(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	held := simOpts{held: []*pb.StoredTitle{stored("t1"), stored("t2"), stored("t3")}}
	e := newManagerWith(t, dir, unhinted(), fastStorage)
	e.startSimNode("n1", storageTitles, held)
	for _, req := range []*pb.PlacementRequest{{TitleId: "t1", NodeId: "n1"}, {TitleId: "t2"}} {
		ack, err := e.admin.Pin(ctx, req)
		if err != nil || ack.Message != "pinned" || ack.NodeId != req.NodeId {
			t.Fatalf("pin %v: %v %v", req, ack, err)
		}
	}
	if ack, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2"}); err != nil || ack.Message != "already pinned" {
		t.Fatalf("pin twice: %v %v", ack, err)
	}
	for name, tc := range map[string]struct {
		req   *pb.PlacementRequest
		unpin bool
		want  codes.Code
		msg   string // in the error's message, when set
	}{
		"unknown title":    {&pb.PlacementRequest{TitleId: "zz"}, false, codes.NotFound, ""},
		"unknown node":     {&pb.PlacementRequest{TitleId: "t1", NodeId: "zz"}, false, codes.NotFound, ""},
		"malformed title":  {&pb.PlacementRequest{TitleId: "a b"}, false, codes.InvalidArgument, ""},
		"no title":         {&pb.PlacementRequest{NodeId: "n1"}, false, codes.InvalidArgument, ""},
		"malformed node":   {&pb.PlacementRequest{TitleId: "t1", NodeId: "../n1"}, false, codes.InvalidArgument, ""},
		"unpin no pin":     {&pb.PlacementRequest{TitleId: "t3"}, true, codes.NotFound, ""},
		"unpin other node": {&pb.PlacementRequest{TitleId: "t1", NodeId: "n2"}, true, codes.NotFound, ""},
		// Said where it is pinned instead.
		"unpin cluster of t1": {&pb.PlacementRequest{TitleId: "t1"}, true, codes.NotFound, "(it is pinned to node n1: vodctl unpin t1 NODE)"},
		"unpin t2 from n1":    {&pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, true, codes.NotFound, "(it is pinned to the cluster: vodctl unpin t2)"},
	} {
		var err error
		if tc.unpin {
			_, err = e.admin.Unpin(ctx, tc.req)
		} else {
			_, err = e.admin.Pin(ctx, tc.req)
		}
		if grpcCode(err) != tc.want || tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v %s", name, err, tc.want, tc.msg)
		}
	}
	check := func(e *env) {
		t.Helper()
		pl := e.placement("")
		if got := pinnedOn(pl, "n1"); !got["t1"] || !got["t2"] || got["t3"] || len(got) != 3 {
			t.Fatalf("pinned flags %v", got)
		}
		if !slices.Equal(pl.ClusterPins, []string{"t2"}) {
			t.Fatalf("cluster pins %v", pl.ClusterPins)
		}
		if _, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{TitleId: "nosuch"}); grpcCode(err) != codes.NotFound {
			t.Fatalf("placement of an unknown title: %v", err)
		}
		if _, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{NodeId: "n9"}); grpcCode(err) != codes.NotFound {
			t.Fatalf("placement of an unknown node: %v", err)
		}
		if pl, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{TitleId: "t1"}); err != nil || len(pl.ClusterPins) != 0 ||
			len(pl.NodePins) != 1 || pl.NodePins[0].State != "stored" {
			t.Fatalf("placement of t1: cluster pins %v node pins %v (%v)", pl.GetClusterPins(), pl.GetNodePins(), err)
		}
		for _, title := range []string{"t1", "t2"} {
			if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"}); grpcCode(err) != codes.FailedPrecondition {
				t.Fatalf("evict pinned %s: %v", title, err)
			}
		}
	}
	check(e)

	// Restart on the same data directory: the pins are back before any
	// node registers again.
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManagerWith(t, dir, unhinted(), fastStorage)
	if pl := e.placement("n1"); len(pl.NodePins) != 1 || pl.NodePins[0].TitleId != "t1" || pl.NodePins[0].State != "not registered" {
		t.Fatalf("before n1 registers again: node pins %v", pl.NodePins)
	}
	e.startSimNode("n1", storageTitles, held)
	check(e)
	if _, err := e.admin.Unpin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatalf("evict after unpin: %v", err)
	}
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n1"}); err != nil {
		t.Fatalf("evict unpinned: %v", err)
	}
}

// TestPinToNodePrefetchesThere: a title pinned to a node that lacks it is
// prefetched there at once, whatever its popularity.
func TestPinToNodePrefetchesThere(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), fastStorage)
	e.startSimNode("n1", storageTitles, simOpts{})
	n2 := e.startSimNode("n2", storageTitles, simOpts{})
	if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "r", NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	pinState := func(node string) string {
		pl := e.placement(node)
		if len(pl.NodePins) != 1 || pl.NodePins[0].TitleId != "r" || pl.NodePins[0].NodeId != "n2" {
			if node == "n1" && len(pl.NodePins) == 0 {
				return "none"
			}
			t.Fatalf("node pins %v", pl.NodePins)
		}
		return pl.NodePins[0].State
	}
	// Listed before the title is there, and only for its node.
	if st := pinState(""); st != "missing" && st != "ordered" && st != "filling" {
		t.Fatalf("pin state before the prefetch: %q", st)
	}
	if st := pinState("n1"); st != "none" {
		t.Fatalf("n1's placement lists n2's pin: %q", st)
	}
	n2.waitCommand(t, "prefetch r", 1)
	n2.complete("r")
	waitFor(t, 5*time.Second, "the pin stored", func() bool { return pinState("n2") == "stored" })
}

// TestDemandFillNeverEvictsPinnedOrPlaying: a fill on demand onto a full
// disk evicts the idle title only, never one pinned or playing; when only
// those are left it evicts nothing.
func TestDemandFillNeverEvictsPinnedOrPlaying(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), fastStorage)
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 3_000_000,
		held: []*pb.StoredTitle{stored("p"), stored("q"), stored("r")}})
	if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "p", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	n.setPlaying("q", 1)
	waitFor(t, 5*time.Second, "q playing in the manager's view", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"].titles["q"].GetSessions() == 1
	})
	e.admitOne("t1")
	n.waitCommand(t, "evict r", 1)
	e.admitOne("t2")
	reports := e.reports("n1")
	waitFor(t, 5*time.Second, "two more reports", func() bool { return e.reports("n1") >= reports+2 })
	for _, c := range n.commands() {
		if c != "evict r" {
			t.Fatalf("commands %v: only r may go", n.commands())
		}
	}
	if !n.has("p") || !n.has("q") {
		t.Fatal("pinned or playing title gone")
	}
}

// TestPlannerEvictsForPrefetchNeverPinnedOrPlaying: to prefetch a promoted
// title onto a full disk the planner evicts the idle, unpinned title, and
// the eviction goes down before the prefetch.
func TestPlannerEvictsForPrefetchNeverPinnedOrPlaying(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Replicator.DiskFill = 1
	})
	// p pinned to the cluster before the node shows up; q playing when
	// it registers.
	if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "p"}); err != nil {
		t.Fatal(err)
	}
	playing := &pb.StoredTitle{TitleId: "q", SizeBytes: 1_000_000, StoredBytes: 1_000_000, Sessions: 1}
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 3_000_000,
		held: []*pb.StoredTitle{stored("p"), playing, stored("r")}})
	n.waitCommand(t, "prefetch hot", 1)
	got := n.commands()
	if i := slices.Index(got, "evict r"); i < 0 || i > slices.Index(got, "prefetch hot") || slices.Contains(got, "evict p") || slices.Contains(got, "evict q") {
		t.Fatalf("commands %v: want evict r before prefetch hot, never p or q", got)
	}
}

// TestPopularityRestoredAfterRestart: the requests a manager saw before a
// restart make its successor prefetch the title at its first plan, with
// no new request: 10 requests at a 3 h half-life are 6.4e-4 req/s, 4.6
// expected within the 2 h prefetch horizon, above the 3 the Replicator
// wants for a title no node holds.
func TestPopularityRestoredAfterRestart(t *testing.T) {
	dir := t.TempDir()
	noCap := func(m *Manager) { fastStorage(m); m.MaxSessionsPerUser = -1 }
	e := newManagerWith(t, dir, unhinted(), noCap)
	e.startSimNode("n1", storageTitles, simOpts{egress: 100 * titleBps})
	for i := 0; i < 10; i++ {
		e.admitOne("t2")
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}

	e = newManagerWith(t, dir, unhinted(), fastStorage)
	n2 := e.startSimNode("n2", storageTitles, simOpts{})
	n2.waitCommand(t, "prefetch t2", 1)
	if got := n2.commands(); len(got) != 1 {
		t.Fatalf("commands %v", got)
	}

	// A manager that never saw the requests orders nothing.
	e3 := newManagerWith(t, "", unhinted(), fastStorage)
	n3 := e3.startSimNode("n3", storageTitles, simOpts{})
	waitFor(t, 5*time.Second, "several plans", func() bool { return e3.storageStats().Plans >= 5 })
	if got := n3.commands(); len(got) != 0 {
		t.Fatalf("fresh manager orders %v", got)
	}
}

// TestEvictedTitleNotBackFromAStaleReport: right after an eviction order
// the title leaves the placement even if the next report was sent before
// the node had the order; if the node keeps it (a viewer came), it is
// back after one more report.
func TestEvictedTitleNotBackFromAStaleReport(t *testing.T) {
	e := newManager(t, "", nil)
	// A fakeNode that ignores commands: it keeps reporting t1.
	e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	if _, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	reports := e.reports("n1")
	if got := pinnedOn(e.placement("n1"), "n1"); len(got) != 0 {
		t.Fatalf("placement right after the order %v", got)
	}
	waitFor(t, 5*time.Second, "the title back after the node kept it", func() bool {
		return len(pinnedOn(e.placement("n1"), "n1")) == 1
	})
	if e.reports("n1") < reports+2 {
		t.Fatalf("back after %d reports, want at least 2", e.reports("n1")-reports)
	}
}

// TestPopularityRestoredUnderAnotherHalfLife: a snapshot taken with one
// half-life and restored with another keeps the titles' request rates.
func TestPopularityRestoredUnderAnotherHalfLife(t *testing.T) {
	dir := t.TempDir()
	e := newManagerWith(t, dir, unhinted(), fastStorage)
	e.startSimNode("n1", storageTitles, simOpts{egress: 100 * titleBps})
	for i := 0; i < 5; i++ {
		e.admitOne("t2")
	}
	rate := func(e *env) float64 {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.rep.Popularity().Rate("t2", time.Now())
	}
	before := rate(e)
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManagerWith(t, dir, unhinted(), func(m *Manager) { fastStorage(m); m.Replicator.HalfLife = 10 * time.Minute })
	if after := rate(e); after < 0.95*before || after > before {
		t.Fatalf("rate %.3g req/s before the restart, %.3g after: want the same (less decay)", before, after)
	}
}

// TestStoredStateAtStart: malformed pins in the store fail Start (a pin
// silently lost could let a pinned title be evicted); a malformed
// popularity snapshot is dropped and the manager starts.
func TestStoredStateAtStart(t *testing.T) {
	for name, tc := range map[string]struct {
		state, value string
		starts       bool
	}{
		"bad pins":        {statePins, `[{"title":"a b"}]`, false},
		"pins not json":   {statePins, `{`, false},
		"bad popularity":  {statePopularity, `{"state":{"demand":[{"title":"t1","weight":-1}]}}`, true},
		"popularity junk": {statePopularity, `x`, true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := store.OpenBadger(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.PutState(context.Background(), tc.state, []byte(tc.value)); err != nil {
				t.Fatal(err)
			}
			b.Close()
			users, _ := boss.NewFile(DefaultRealm, testUsers())
			m := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
				DataDir: dir, Secret: testSecret, BOSS: users, Logger: testLogger(t)}
			err = m.Start()
			if err == nil {
				m.Close()
			}
			if (err == nil) != tc.starts {
				t.Fatalf("Start: %v, want starts=%v", err, tc.starts)
			}
		})
	}
}

// TestFillWaitsForAFreshReport: when a fill on demand finds no room in
// the manager's view because a fill there just completed (the view still
// shows it filling, and the rest of the disk is pinned), the request
// waits in the scheduler's queue for the node's next report rather than
// evict from the stale view, and then the completed title is evicted
// rather than the choice left to the node (whose own eviction knows
// nothing of pins).
func TestFillWaitsForAFreshReport(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), fastStorage)
	if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "p"}); err != nil {
		t.Fatal(err)
	}
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_000_000, held: []*pb.StoredTitle{
		stored("p"), {TitleId: "r", SizeBytes: 1_000_000, StoredBytes: 500_000, Filling: true}}})
	reports := e.reports("n1")
	waitFor(t, 5*time.Second, "a report with r filling", func() bool { return e.reports("n1") > reports })
	n.freeze()
	n.complete("r") // done on the node, still filling in its reports
	reports = e.reports("n1")
	waitFor(t, 5*time.Second, "a stale report", func() bool { return e.reports("n1") > reports+1 })
	admitted := make(chan string, 1)
	go func() { admitted <- e.admitOne("t1") }()
	waitFor(t, 5*time.Second, "the admission to wait for a report", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"].reportCh != nil || e.m.sched.Queued() == 1
	})
	if got := n.commands(); len(got) != 0 {
		t.Fatalf("evicted from the stale view: %v", got)
	}
	n.thaw()
	select {
	case <-admitted:
	case <-time.After(waitForMin):
		t.Fatal("admission never answered")
	}
	n.waitCommand(t, "evict r", 1)
	if got := n.commands(); len(got) != 1 {
		t.Fatalf("commands %v, want only evict r", got)
	}
}

// TestProtectCommandCarriesPins: each node is told which titles its own
// eviction must keep (its pins and the cluster's) when a pin changes and
// when it registers.
func TestProtectCommandCarriesPins(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	n := e.startNode("n1", nodeOpts{})
	n.registrationProtect(t) // no pin yet
	// next skips other commands (a pin to the node also prefetches there).
	next := func(want ...string) {
		t.Helper()
		for {
			select {
			case c := <-n.cmds:
				if c.GetProtect() == nil {
					continue
				}
				if got := c.GetProtect().GetTitleIds(); !slices.Equal(got, want) {
					t.Fatalf("protect %v, want %v", got, want)
				}
				return
			case <-time.After(waitForMin):
				t.Fatalf("no protect command (want %v)", want)
			}
		}
	}
	for _, step := range []struct {
		req   *pb.PlacementRequest
		unpin bool
		want  []string
	}{
		{&pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, false, []string{"t2"}},
		{&pb.PlacementRequest{TitleId: "t1"}, false, []string{"t1", "t2"}},
		{&pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, true, []string{"t1"}},
	} {
		var err error
		if step.unpin {
			_, err = e.admin.Unpin(ctx, step.req)
		} else {
			_, err = e.admin.Pin(ctx, step.req)
		}
		if err != nil {
			t.Fatal(err)
		}
		next(step.want...)
	}
	// The node registers again (a restart): its registration's commands
	// go down the stream it opens next, as a node's always follows its
	// registration.
	n = e.startNode("n1", nodeOpts{})
	next("t1")
}

// TestFillWaitsForAFreshReportWhenTheNodeSaysInUse: the scheduler sees
// room (it has no reservation for the titles on the disk) but the node's
// report says both are playing (sessions this manager does not know of):
// the manager waits for the node's next report before answering, then
// evicts the title the fresh report shows idle.
//
// The node reports by hand, each report when the test sends it, so that
// the report the admission waits for is the fresh one (a node reporting
// on its own ticker could send it, or a stale one, before the test saw
// the admission wait); the heartbeat interval is long, as the admission
// waits two of them at most for the report.
func TestFillWaitsForAFreshReportWhenTheNodeSaysInUse(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.Scheduler.HeartbeatInterval = 10 * time.Second })
	playing := func(id string, sessions int32) *pb.StoredTitle {
		return &pb.StoredTitle{TitleId: id, StoredBytes: 1_500_000, SizeBytes: 1_500_000, Sessions: sessions}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stale := []*pb.StoredTitle{playing("t1", 1), playing("t2", 1)}
	if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n1", RtspAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2",
		Titles: stale, Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 3_000_000}}); err != nil {
		t.Fatal(err)
	}
	st, err := e.nc.Heartbeat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evicted := make(chan string, 16)
	go func() {
		for {
			c, err := st.Recv()
			if err != nil {
				return
			}
			if ev := c.GetEvict(); ev != nil {
				evicted <- ev.GetTitleId()
			}
		}
	}()
	report := func(what string, titles ...*pb.StoredTitle) {
		t.Helper()
		at := e.reports("n1")
		if err := st.Send(&pb.LoadReport{NodeId: "n1", AtUnixMs: time.Now().UnixMilli(), Titles: titles, DiskFreeBytes: 1}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, what, func() bool { return e.reports("n1") > at })
	}
	report("the first report", stale...)
	admitted := make(chan *base.Response, 1)
	go func() { admitted <- e.describe("demo", "demo", "t3") }()
	waitFor(t, 10*time.Second, "the admission to wait for a report", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"].reportCh != nil
	})
	select {
	case title := <-evicted:
		t.Fatalf("evicted %s from the stale view", title)
	default:
	}
	report("the fresh report", playing("t1", 1), playing("t2", 0)) // t2's viewer left
	select {
	case res := <-admitted:
		if res.StatusCode != base.StatusFound {
			t.Fatalf("admission after the fresh report: %d", res.StatusCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("admission never answered")
	}
	select {
	case title := <-evicted:
		if title != "t2" {
			t.Fatalf("evicted %s, want t2 (t1 plays)", title)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no eviction ordered")
	}
}

// TestPinWarnings: a pin to a node that drains (and is at weight 0), or
// beyond its disk, is taken, and the answer says why it may not be
// fetched there.
func TestPinWarnings(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	e.startNode("n1", nodeOpts{disk: 3_000_000})
	pin := func(title string) string {
		t.Helper()
		ack, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		return ack.Message
	}
	if msg := pin("t1"); msg != "pinned; fetching it there from the origin (vodctl fills shows the fill)" {
		t.Fatalf("first pin: %q", msg)
	}
	if msg := pin("t2"); msg != "pinned; fetching it there from the origin (vodctl fills shows the fill)" {
		t.Fatalf("second pin (the disk's size exactly): %q", msg)
	}
	if msg := pin("t3"); !strings.Contains(msg, "take 4500000 bytes, more than its disk (3000000 bytes)") {
		t.Fatalf("third pin: %q", msg)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if msg := pin("adult-1"); !strings.Contains(msg, "n1 is draining (vodctl node n1 --undrain puts it back in service)") {
		t.Fatalf("pin to a draining node: %q", msg)
	}
	// Draining and at weight 0: both are named, and undone together.
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr(int32(0))}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Unpin(ctx, &pb.PlacementRequest{TitleId: "adult-1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if msg := pin("adult-1"); !strings.Contains(msg, "n1 is draining and has weight 0 (vodctl node n1 --undrain --weight N puts it back in service)") {
		t.Fatalf("pin to a draining node at weight 0: %q", msg)
	}
}
