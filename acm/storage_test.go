package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// storageTitles: 1 MB titles at 600 kbit/s; "hot" is promoted (a
// popularity hint of 5000 requests per day).
var storageTitles = []*pb.Title{
	{Id: "hot", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids", PopularityPerDay: 5000},
	{Id: "p", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
	{Id: "q", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
	{Id: "r", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
	{Id: "t1", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
	{Id: "t2", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
	{Id: "t3", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
}

// unhinted is storageTitles without any popularity hint.
func unhinted() []*pb.Title {
	out := make([]*pb.Title, len(storageTitles))
	for i, t := range storageTitles {
		c := proto.Clone(t).(*pb.Title)
		c.PopularityPerDay = 0
		out[i] = c
	}
	return out
}

// fastStorage plans every 100 ms with the off-peak window all day, so
// prefetches do not depend on the hour the test runs.
func fastStorage(m *Manager) {
	m.PlanInterval = 100 * time.Millisecond
	m.ShiftCheck = 50 * time.Millisecond
	m.Replicator.OffPeak = smm.Window{Start: 0, End: 24 * time.Hour}
}

func stored(id string) *pb.StoredTitle {
	return &pb.StoredTitle{TitleId: id, SizeBytes: 1_000_000, StoredBytes: 1_000_000}
}

func (e *env) fills() []*pb.Fill {
	e.t.Helper()
	r, err := e.admin.ListFills(context.Background(), &pb.ListFillsRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Fills
}

func (e *env) fill(node, title string) *pb.Fill {
	for _, f := range e.fills() {
		if f.NodeId == node && f.TitleId == title {
			return f
		}
	}
	return nil
}

func (e *env) storageStats() *pb.StorageStats {
	e.t.Helper()
	p, err := e.admin.GetPolicy(context.Background(), &pb.GetPolicyRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.StorageStats
}

// TestHintPrefetchedBeforeAnyRequest: a title the catalog promotes is
// prefetched as soon as a node is there, before anyone asks for it, and
// nothing else is; its progress shows in ListFills until it completes.
func TestHintPrefetchedBeforeAnyRequest(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, fastStorage)
	n := e.startSimNode("n1", storageTitles, simOpts{})
	n.waitCommand(t, "prefetch hot", 1)
	n.progress("hot", 400_000)
	waitFor(t, 5*time.Second, "the fill's progress in ListFills", func() bool {
		f := e.fill("n1", "hot")
		return f != nil && f.State == "filling" && f.StoredBytes == 400_000 && f.SizeBytes == 1_000_000 && f.Prefetch
	})
	n.complete("hot")
	waitFor(t, 5*time.Second, "the fill done", func() bool { return len(e.fills()) == 0 && e.storageStats().FillsDone == 1 })
	pl, err := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{TitleId: "hot"})
	if err != nil || len(pl.Replicas) != 1 || pl.Replicas[0].StoredBytes != 1_000_000 || pl.Replicas[0].Filling {
		t.Fatalf("placement %v %v", pl, err)
	}
	if got := n.commands(); len(got) != 1 {
		t.Fatalf("commands %v, want only the promoted title's prefetch", got)
	}
}

// TestNoHintNoPrefetch: without hints or requests the planner orders
// nothing (a prefetch costs what the fill on demand it replaces would).
func TestNoHintNoPrefetch(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), fastStorage)
	n := e.startSimNode("n1", storageTitles, simOpts{})
	waitFor(t, 5*time.Second, "several plans", func() bool { return e.storageStats().Plans >= 5 })
	if got := n.commands(); len(got) != 0 {
		t.Fatalf("commands %v without demand", got)
	}
}

// TestPrefetchRetriedAfterOriginFailure: a prefetch the node reports
// failed (the origin refused) is in backoff, not ordered again before its
// next try, retried after it with one more attempt counted, and done when
// the origin is back.
func TestPrefetchRetriedAfterOriginFailure(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Replicator.RetryBase, m.Replicator.RetryMax = 400*time.Millisecond, 2*time.Second
	})
	n := e.startSimNode("n1", storageTitles, simOpts{before: func(n *simNode) { n.failing = true }})
	n.waitCommand(t, "prefetch hot", 1)
	var f *pb.Fill
	waitFor(t, 5*time.Second, "the failed prefetch in backoff", func() bool {
		f = e.fill("n1", "hot")
		return f != nil && f.State == "backoff"
	})
	if f.Attempts != 1 || f.NextTryUnixMs <= f.SinceUnixMs || f.NextTryUnixMs-f.SinceUnixMs > 400 {
		t.Fatalf("backoff %+v: want 1 attempt, next try within the first step (400 ms)", f)
	}
	// Not ordered again before its next try.
	next := time.UnixMilli(f.NextTryUnixMs)
	for time.Until(next) > 30*time.Millisecond {
		if k := n.count("prefetch hot"); k != 1 {
			t.Fatalf("prefetch ordered %d times before its next try", k)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Retried, fails again: the second step is longer.
	n.waitCommand(t, "prefetch hot", 2)
	waitFor(t, 5*time.Second, "the second failure", func() bool {
		f = e.fill("n1", "hot")
		return f != nil && f.State == "backoff" && f.Attempts == 2
	})
	if d := f.NextTryUnixMs - f.SinceUnixMs; d < 400 || d > 800 {
		t.Fatalf("second backoff step %d ms, want in [400, 800]", d)
	}
	n.setFailing(false)
	n.waitCommand(t, "prefetch hot", 3)
	n.complete("hot")
	waitFor(t, 5*time.Second, "the retried prefetch done", func() bool {
		s := e.storageStats()
		return len(e.fills()) == 0 && s.FillsFailed == 2 && s.Retries == 2 && s.FillsDone == 1
	})
}

// TestVanishedOrUnstartedPrefetchFails: a fill that disappears from the
// node's report before completing, and a prefetch the node never starts
// within OrderTimeout, count as failed (backoff) without the node saying
// so.
func TestVanishedOrUnstartedPrefetchFails(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.OrderTimeout = 300 * time.Millisecond
		m.Replicator.RetryBase, m.Replicator.RetryMax = time.Hour, time.Hour
	})
	n := e.startSimNode("n1", storageTitles, simOpts{})
	n.waitCommand(t, "prefetch hot", 1)
	waitFor(t, 5*time.Second, "the fill reported", func() bool {
		f := e.fill("n1", "hot")
		return f != nil && f.State == "filling"
	})
	n.drop("hot")
	waitFor(t, 5*time.Second, "the vanished fill in backoff", func() bool {
		f := e.fill("n1", "hot")
		return f != nil && f.State == "backoff" && f.Attempts == 1
	})

	d := e.startSimNode("n2", storageTitles, simOpts{before: func(n *simNode) { n.deaf = true }})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n2"}); err != nil {
		t.Fatal(err)
	}
	if f := e.fill("n2", "t1"); f == nil || f.State != "ordered" || !f.Prefetch {
		t.Fatalf("fill right after the order: %+v", f)
	}
	d.waitCommand(t, "prefetch t1", 1)
	waitFor(t, 5*time.Second, "the unstarted prefetch in backoff", func() bool {
		f := e.fill("n2", "t1")
		return f != nil && f.State == "backoff" && f.Attempts == 1
	})
	if pl, _ := e.admin.ListPlacement(context.Background(), &pb.ListPlacementRequest{NodeId: "n2"}); len(pl.Replicas) != 0 {
		t.Fatalf("a prefetch given up still in the placement: %v", pl)
	}

	// An operator's prefetch on a node that dies while it fills waits in
	// backoff for the node (it was forgotten), and its last report shows
	// as "node down" until the Replicator's state takes over.
	k := e.startSimNode("n3", storageTitles, simOpts{})
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t2", NodeId: "n3"}); err != nil {
		t.Fatal(err)
	}
	k.waitCommand(t, "prefetch t2", 1)
	k.progress("t2", 100_000)
	waitFor(t, 5*time.Second, "the fill reported", func() bool {
		f := e.fill("n3", "t2")
		return f != nil && f.State == "filling" && f.StoredBytes == 100_000
	})
	k.stop()
	waitFor(t, 10*time.Second, "the dead node's prefetch in backoff", func() bool {
		f := e.fill("n3", "t2")
		return f != nil && f.State == "backoff" && f.Attempts == 1
	})
}

// TestPrefetchByHand: the operator's prefetch without a node goes where
// the Replicator chooses; the same again while that fill is ordered is
// refused ALREADY_EXISTS naming the node and that it is ordered there (it
// ordered a second copy on the other node, though vodctl prefetch --help
// said a repeat is refused); naming the other node orders a second copy; a
// title is never filled twice on one node; errors carry the right codes.
func TestPrefetchByHand(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), fastStorage)
	ctx := context.Background()
	n1 := e.startSimNode("n1", storageTitles, simOpts{})
	n2 := e.startSimNode("n2", storageTitles, simOpts{})
	ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
	if err != nil || (ack.NodeId != "n1" && ack.NodeId != "n2") {
		t.Fatalf("prefetch: %v %v", ack, err)
	}
	first, other := n1, n2
	if ack.NodeId == "n2" {
		first, other = n2, n1
	}
	first.waitCommand(t, "prefetch t1", 1)
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: first.id}); grpcCode(err) != codes.AlreadyExists {
		t.Fatalf("second fill on one node: %v", err)
	}
	again, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"})
	// Ordered or, once the node reported it, filling there.
	if want := `on node "` + first.id + `" (`; grpcCode(err) != codes.AlreadyExists || !strings.Contains(err.Error(), `the cluster already has "t1": `) || !strings.Contains(err.Error(), want) {
		t.Fatalf("the same prefetch naming no node again: %v %v, want ALREADY_EXISTS naming %s", again, err, first.id)
	}
	if other.count("prefetch t1") != 0 {
		t.Fatalf("the refused prefetch reached %s: %v", other.id, other.commands())
	}
	ack2, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: other.id})
	if err != nil || ack2.NodeId != other.id {
		t.Fatalf("second replica, its node named: %v %v", ack2, err)
	}
	other.waitCommand(t, "prefetch t1", 1)
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t1"}); grpcCode(err) != codes.AlreadyExists {
		t.Fatalf("every node has it: %v", err)
	}
	for name, tc := range map[string]struct {
		req  *pb.PlacementRequest
		want codes.Code
	}{
		"unknown title":   {&pb.PlacementRequest{TitleId: "zz"}, codes.NotFound},
		"unknown node":    {&pb.PlacementRequest{TitleId: "t2", NodeId: "zz"}, codes.NotFound},
		"malformed title": {&pb.PlacementRequest{TitleId: "a b"}, codes.InvalidArgument},
		"empty title":     {&pb.PlacementRequest{}, codes.InvalidArgument},
		"malformed node":  {&pb.PlacementRequest{TitleId: "t2", NodeId: "n/1"}, codes.InvalidArgument},
	} {
		if _, err := e.admin.Prefetch(ctx, tc.req); grpcCode(err) != tc.want {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// A draining node takes no prefetch.
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); grpcCode(err) != codes.FailedPrecondition {
		t.Fatalf("prefetch on a draining node: %v", err)
	}
	// The planner does not order the operator's prefetches again.
	first.complete("t1")
	other.complete("t1")
	waitFor(t, 5*time.Second, "both fills done", func() bool { return len(e.fills()) == 0 })
	if a, b := n1.count("prefetch t1"), n2.count("prefetch t1"); a != 1 || b != 1 {
		t.Fatalf("prefetches of t1: n1 %d, n2 %d", a, b)
	}
}

// TestShiftPlansEarly: with a plan interval of an hour, a request that
// moves demand (a title enters the most requested) makes the manager plan
// at once. The Replicator's rule for these settings: one request with a
// 60 s half-life is ln2/60 req/s, times a 10 s expected session (half
// the 20 s title) times 600 kbit/s = 69 kbit/s, over 2.3 times what one
// replica carries at 0.5% of 6 Mbit/s (30 kbit/s): 2 replicas, so the
// title held by n1 is prefetched onto n2 (off-peak all day).
func TestShiftPlansEarly(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		fastStorage(m)
		m.PlanInterval = time.Hour
		m.Replicator.HalfLife = time.Minute
		m.Replicator.TargetUtilization = 0.005
	})
	n1 := e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1")}})
	n2 := e.startSimNode("n2", storageTitles, simOpts{})
	// The plans after the registrations (one heartbeat later) are done.
	waitFor(t, 5*time.Second, "several reports", func() bool { return e.reports("n2") >= 10 })
	plans := e.storageStats().Plans
	waitFor(t, 5*time.Second, "more reports", func() bool { return e.reports("n2") >= 13 })
	if got := n2.commands(); len(got) != 0 || e.storageStats().Plans != plans {
		t.Fatalf("without requests: commands %v, plans %d -> %d", got, plans, e.storageStats().Plans)
	}
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusFound || !containsStr(res.Header["Location"], n1Addr) {
		t.Fatalf("describe: %d %v", res.StatusCode, res.Header["Location"])
	}
	n2.waitCommand(t, "prefetch t1", 1)
	if got := n1.commands(); len(got) != 0 {
		t.Fatalf("holder got %v", got)
	}
}

// n1Addr is the RTSP address fake nodes register with.
const n1Addr = "127.0.0.1:1"

func containsStr(vs []string, sub string) bool {
	return len(vs) == 1 && strings.Contains(vs[0], sub)
}

// TestSessionEndsTeachMeanSession: the watched time of sessions that
// ended (STARTED to ENDED at the node) is what the Replicator expects a
// session to last, once four have ended.
func TestSessionEndsTeachMeanSession(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), nil)
	e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1")}})
	// The simulated node lists no sessions in its load reports: its
	// sessions start (by its clock) after every report taken meanwhile,
	// so that two reports applied between a STARTED and its ENDED (a
	// slow machine) do not end them as lost.
	at := time.Now().Add(time.Minute)
	for i := 0; i < 4; i++ {
		sid := e.admitOne("t1")
		for _, ev := range []struct {
			k  pb.SessionEvent_Kind
			at time.Time
		}{{pb.SessionEvent_KIND_STARTED, at}, {pb.SessionEvent_KIND_ENDED, at.Add(2 * time.Second)}} {
			if _, err := e.nc.ReportSession(context.Background(), &pb.SessionEvent{NodeId: "n1", SessionId: sid,
				Kind: ev.k, AtUnixMs: ev.at.UnixMilli()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.m.mu.Lock()
	got := e.m.rep.Popularity().MeanSession("t1", 20, at.Add(3*time.Second))
	e.m.mu.Unlock()
	if got < 1.9 || got > 2.1 {
		t.Fatalf("mean session %.2f s, want about 2 (the sessions' watched time), not 10 (half the title)", got)
	}
}

// TestStoragePolicyByName: a baseline policy runs without a planner; an
// unknown policy or planner fails Start.
func TestStoragePolicyByName(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) { fastStorage(m); m.Evictor = "lru" })
	n := e.startSimNode("n1", storageTitles, simOpts{})
	p, err := e.admin.GetPolicy(context.Background(), &pb.GetPolicyRequest{})
	if err != nil || p.StoragePolicy != "lru" || p.StoragePlanner != "none" || p.StorageStats != nil {
		t.Fatalf("policy %v %v", p, err)
	}
	waitFor(t, 5*time.Second, "several reports", func() bool { return e.reports("n1") >= 5 })
	if got := n.commands(); len(got) != 0 {
		t.Fatalf("lru orders %v: it caches on demand only", got)
	}
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t2"}); err != nil {
		t.Fatalf("prefetch by hand without a planner: %v", err)
	}
	n.waitCommand(t, "prefetch t2", 1)

	for name, f := range map[string]func(*Manager){
		"unknown policy":  func(m *Manager) { m.Evictor = "fifo" },
		"unknown planner": func(m *Manager) { m.StoragePlanner = "oracle" },
		"bad replicator":  func(m *Manager) { m.Replicator.TargetUtilization = 2 },
	} {
		m := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
			DataDir: t.TempDir(), Secret: testSecret, BOSS: e.users.BOSS, Logger: testLogger(t)}
		f(m)
		if err := m.Start(); err == nil {
			m.Close()
			t.Errorf("%s: started", name)
		}
	}
}

// A fill on demand shows as reserved until its viewer reaches the node and
// the node reports the fill, then as filling with the node's progress.
func TestFillOnDemandReservedUntilViewerArrives(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	e.admitOne("t1")
	seen := e.reports("n1")
	waitFor(t, 5*time.Second, "a report after the admission", func() bool { return e.reports("n1") > seen })
	if f := e.fill("n1", "t1"); f == nil || f.State != "reserved" || f.Prefetch || f.StoredBytes != 0 {
		t.Fatalf("fill on demand before its viewer: %+v", f)
	}
	if _, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); grpcCode(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), "reserved on node") {
		t.Fatalf("evicting a reserved fill: %v", err)
	}
	n.mu.Lock()
	n.titles = append(n.titles, &pb.StoredTitle{TitleId: "t1", StoredBytes: 1000, SizeBytes: 10_000, Filling: true})
	n.mu.Unlock()
	waitFor(t, 5*time.Second, "the node's fill", func() bool {
		f := e.fill("n1", "t1")
		return f != nil && f.State == "filling" && f.StoredBytes == 1000
	})
}

// Titles pinned to a node are not room for a fill there: with the only
// node's disk full of titles pinned to it, a request for another title is
// refused at the front door (453), not redirected to a node that would
// refuse it; unpinned, the same titles are room again.
func TestPinnedTitlesAreNotRoomForFills(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{disk: 3_000_000, diskFree: 1, titles: []*pb.StoredTitle{
		{TitleId: "t1", StoredBytes: 1_500_000, SizeBytes: 1_500_000},
		{TitleId: "t2", StoredBytes: 1_500_000, SizeBytes: 1_500_000},
	}})
	ctx := context.Background()
	for _, id := range []string{"t1", "t2"} {
		if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: id, NodeId: "n1"}); err != nil {
			t.Fatal(err)
		}
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("a fill on a disk full of pinned titles: %d, want 453", res.StatusCode)
	}
	e.m.mu.Lock()
	why := e.m.refusalLocked(store.Title{ID: "t3", BitrateBps: titleBps, SizeBytes: 1_500_000})
	e.m.mu.Unlock()
	if !strings.Contains(why, "disk room") {
		t.Fatalf("the refusal logged as %q", why)
	}
	if _, err := e.admin.Unpin(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if res := e.describe("demo", "demo", "t3"); res.StatusCode != base.StatusFound {
		t.Fatalf("with t2 unpinned: %d, want 302", res.StatusCode)
	}
}

// An operator's eviction of a title the planner prefetched is not undone
// at the next plan: the answer says how long it holds, and no new
// prefetch of it reaches that node meanwhile.
func TestOperatorEvictionNotUndoneByThePlanner(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, fastStorage)
	n := e.startSimNode("n1", storageTitles, simOpts{})
	n.waitCommand(t, "prefetch hot", 1)
	n.complete("hot")
	waitFor(t, 5*time.Second, "the fill done", func() bool { return e.storageStats().FillsDone == 1 })
	ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "hot", NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	// The hold as the configuration writes it (evict_hold 1h), not Go's
	// "1h0m0s".
	if !strings.Contains(ack.Message, "not planned (prefetched) on n1 again for 1h; a viewer sent there may still fill it") || strings.Contains(ack.Message, "1h0m") {
		t.Fatalf("ack %q", ack.Message)
	}
	n.waitCommand(t, "evict hot", 1)
	plans := e.storageStats().Plans
	waitFor(t, 5*time.Second, "ten more plans", func() bool { return e.storageStats().Plans >= plans+10 })
	if got := n.count("prefetch hot"); got != 1 {
		t.Fatalf("hot prefetched %d times on n1 after the operator evicted it", got)
	}
}

// A complete copy whose size is not the catalog's (the title was replaced
// at the origin under the same id, the node does not know the copy's
// version) and that no one plays is evicted; a copy of the catalog's size
// is not.
func TestStaleCopyEvicted(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, nil)
	old := &pb.StoredTitle{TitleId: "t1", SizeBytes: 999_000, StoredBytes: 999_000}
	n := e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{old, stored("t2")}})
	n.waitCommand(t, "evict t1", 1)
	e.nextReport("n1")
	e.nextReport("n1")
	if n.count("evict t2") != 0 || n.count("evict t1") != 1 {
		t.Fatalf("commands %v, want t1 evicted once, t2 kept", n.commands())
	}
}

// An operator's prefetch on a node at its fill limit (max_fills_per_node)
// is queued, not ordered beside the fills already running, listed as
// queued, and ordered by the plan as soon as a fill there ends; one whose
// room could not be made beside those queued, and one on a node that
// reports a disk fault, are refused.
func TestOperatorPrefetchQueuedAtFillLimit(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) {
		fastStorage(m)
		m.Replicator.MaxFillsPerNode = 1
	})
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_500_000}) // hot, t1 and half a title
	n.waitCommand(t, "prefetch hot", 1)
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ack.GetMessage(), "queued") || !strings.Contains(ack.GetMessage(), "max_fills_per_node 1") {
		t.Fatalf("answer %q: want it queued at the fill limit", ack.GetMessage())
	}
	if f := e.fill("n1", "t1"); f == nil || f.State != "queued" || !f.Prefetch {
		t.Fatalf("fill listed %+v, want queued", f)
	}
	// No room for a second one beside hot's fill and t1's queued prefetch.
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("queueing a prefetch with no room for it: %v, want ResourceExhausted", err)
	}
	for range 3 { // plans come every 100 ms: none orders it beside hot's fill
		e.m.plan(time.Now())
	}
	if k := n.count("prefetch t1"); k != 0 {
		t.Fatalf("queued prefetch ordered %d times while the node was at its fill limit", k)
	}
	n.complete("hot")
	n.waitCommand(t, "prefetch t1", 1)
	n.complete("t1")
	waitFor(t, 5*time.Second, "the queued prefetch done", func() bool {
		s := e.storageStats()
		return e.fill("n1", "t1") == nil && s.Retries == 0 && s.FillsFailed == 0
	})

	e.m.mu.Lock()
	e.m.nodes["n1"].diskFault = true
	e.m.mu.Unlock()
	if _, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); status.Code(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), "disk fault") {
		t.Fatalf("prefetch on a node with a disk fault: %v", err)
	}
}

// TestTitleLargerThanEveryDisk: a title larger than the whole disk of
// every node that could take its viewer is refused (453) with that reason
// in the manager's log, not as a disk taken by titles playing, filling or
// pinned (the node's disk is empty).
func TestTitleLargerThanEveryDisk(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{disk: 1_000_000})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("a title larger than the only disk: %d, want 453", res.StatusCode)
	}
	e.m.mu.Lock()
	why := e.m.refusalLocked(store.Title{ID: "t1", BitrateBps: titleBps, SizeBytes: 1_500_000})
	e.m.mu.Unlock()
	if !strings.Contains(why, "a disk as large as the title (1500000 bytes") {
		t.Fatalf("the refusal logged as %q", why)
	}
}

// TestRefusalForADiskFault: the only node that could take a viewer lacks
// the title and reports a disk fault (its title cache full or read only):
// the refusal says so, as a want of disk room (453 "no node has disk
// room"), not as one of bandwidth, which sent the operator to the nodes'
// egress while the node had all of it free.
func TestRefusalForADiskFault(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	n.mu.Lock()
	n.diskFault = true
	n.mu.Unlock()
	waitFor(t, 5*time.Second, "the disk fault reported", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"].diskFault
	})
	res := e.describe("demo", "demo", "t1")
	if res.StatusCode != base.StatusNotEnoughBandwidth || !strings.Contains(res.StatusMessage, "disk room") {
		t.Fatalf("a title only a node with a disk fault could take: %d %q, want 453 (no node has disk room)", res.StatusCode, res.StatusMessage)
	}
	e.m.mu.Lock()
	why := e.m.refusalLocked(store.Title{ID: "t1", BitrateBps: titleBps, SizeBytes: 1_500_000})
	e.m.mu.Unlock()
	if !strings.Contains(why, "n1 reports a disk fault") {
		t.Fatalf("the refusal logged as %q", why)
	}
}
