package acm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// withMetrics serves the manager's /metrics on a loopback port.
func withMetrics(m *Manager) { m.MetricsListen = "127.0.0.1:0" }

// scrape returns the manager's /metrics text.
func scrape(t *testing.T, m *Manager) string {
	t.Helper()
	res, err := http.Get("http://" + m.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", res.StatusCode, err)
	}
	return string(b)
}

// nodeSeries returns the vodcluster_node_* lines of node id in text.
func nodeSeries(text, id string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "vodcluster_node_") && strings.Contains(l, `node="`+id+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// listed reports whether ListNodes lists node id.
func (e *env) listed(id string) bool {
	e.t.Helper()
	r, err := e.admin.ListNodes(context.Background(), &pb.ListNodesRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	return slices.ContainsFunc(r.Nodes, func(n *pb.NodeInfo) bool { return n.NodeId == id })
}

// storedPins decodes the pins in st (none when not stored).
func storedPins(t *testing.T, st store.Store) *smm.Pins {
	t.Helper()
	p := &smm.Pins{}
	b, err := st.State(context.Background(), statePins)
	if errors.Is(err, store.ErrNotFound) {
		return p
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := p.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return p
}

// storedHolds decodes the eviction holds in st.
func storedHolds(t *testing.T, st store.Store) []smm.Hold {
	t.Helper()
	b, err := st.State(context.Background(), stateEvictHolds)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var hs []smm.Hold
	if err := json.Unmarshal(b, &hs); err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestForgetNode, on badger on disk: a live node cannot be forgotten; once
// it left, forgetting it removes it from the node list, the placement,
// the fills, the sessions and the metrics, ends the session left on it,
// drops the eviction queued for its return, and removes its drain,
// weight, eviction holds and pins from the store, keeping the other
// node's and the cluster's. The id registering again, before and after a
// manager restart, is a new node.
func TestForgetNode(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e := newManager(t, dir, func(m *Manager) {
		withMetrics(m)
		// n1 dies by its goodbye alone: a loaded machine that holds its
		// reports up for three intervals (600 ms) must not make it dead
		// before the test's "alive" checks.
		m.Scheduler.MissedHeartbeats = 50
	})
	whole := func(id string) *pb.StoredTitle { // a copy of testTitles' size
		return &pb.StoredTitle{TitleId: id, SizeBytes: 1_500_000, StoredBytes: 1_500_000}
	}
	n1 := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{whole("t1"), whole("t2"), whole("t3")}})
	e.startNode("n2", nodeOpts{})
	sid := e.admitOne("t1") // on n1, its holder
	if err := n1.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*pb.SetNodeRequest{
		{NodeId: "n1", Draining: ptr(true), Weight: ptr(int32(40))},
		{NodeId: "n2", Weight: ptr(int32(70))},
	} {
		if _, err := e.admin.SetNode(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, req := range []*pb.PlacementRequest{{TitleId: "t1", NodeId: "n1"}, {TitleId: "adult-1"}} {
		if _, err := e.admin.Pin(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}

	// Alive: refused, nothing changed.
	_, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
	if grpcCode(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "is alive") ||
		!strings.Contains(err.Error(), "vodctl node n1 --drain") {
		t.Fatalf("forget a live node: %v", err)
	}
	if !e.listed("n1") || e.session(sid) == nil || len(storedPins(t, e.m.st).NodePins("n1")) != 1 {
		t.Fatal("a refused forget changed something")
	}
	if _, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "zz"}); grpcCode(err) != codes.NotFound {
		t.Fatalf("unknown node: %v", err)
	}
	for _, bad := range []string{"", "../n1", strings.Repeat("n", 129)} {
		if _, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: bad}); grpcCode(err) != codes.InvalidArgument {
			t.Errorf("ForgetNode %q: %v, want InvalidArgument", bad, err)
		}
	}

	// The node shuts down; an eviction ordered meanwhile waits for it.
	n1.leave()
	waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
	if ack, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n1"}); err != nil || !strings.Contains(ack.Message, "when it is back") {
		t.Fatalf("evict on the dead node: %v %v", ack, err)
	}
	if got := nodeSeries(scrape(t, e.m), "n1"); !slices.Contains(got, "vodcluster_node_up{node=\"n1\"} 0") {
		t.Fatalf("the dead node's series before the forget: %v", got)
	}

	r, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Registered || r.SessionsEnded != 1 || !slices.Equal(r.UnpinnedTitles, []string{"t1"}) || !r.SettingRemoved ||
		r.HoldsRemoved != 2 || r.CommandsDropped < 1 || !strings.Contains(r.Message, "unpinned t1") {
		t.Fatalf("forget: %+v", r)
	}
	if e.listed("n1") || !e.listed("n2") {
		t.Fatalf("after the forget: n1 listed %v (want false), n2 %v (want true)", e.listed("n1"), e.listed("n2"))
	}
	pl, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range pl.Replicas {
		if rep.NodeId == "n1" {
			t.Fatalf("placement still lists n1: %v", rep)
		}
	}
	if len(pl.NodePins) != 0 || !slices.Equal(pl.ClusterPins, []string{"adult-1"}) {
		t.Fatalf("pins after the forget: node %v, cluster %v", pl.NodePins, pl.ClusterPins)
	}
	if _, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{NodeId: "n1"}); grpcCode(err) != codes.NotFound {
		t.Fatalf("placement of the forgotten node: %v", err)
	}
	fills, err := e.admin.ListFills(ctx, &pb.ListFillsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fills.Fills {
		if f.NodeId == "n1" {
			t.Fatalf("fills list n1: %v", f)
		}
	}
	if e.session(sid) != nil || inStore(t, e.m.st, sid) {
		t.Fatal("the session left on the forgotten node is still listed or stored")
	}
	if got := nodeSeries(scrape(t, e.m), "n1"); len(got) != 0 {
		t.Fatalf("metrics of the forgotten node: %v", got)
	}
	if got := nodeSeries(scrape(t, e.m), "n2"); len(got) == 0 {
		t.Fatal("n2's metrics went with n1's")
	}
	checkStore := func(when string) {
		t.Helper()
		settings, raw := storedSettings(t, e.m.st)
		if _, ok := settings["n1"]; ok || settings["n2"].Weight == nil || *settings["n2"].Weight != 70 {
			t.Fatalf("%s: stored settings %s, want n2's only", when, raw)
		}
		for _, h := range storedHolds(t, e.m.st) {
			if h.Node == "n1" {
				t.Fatalf("%s: stored hold %+v of the forgotten node", when, h)
			}
		}
		if p := storedPins(t, e.m.st); len(p.NodePins("n1")) != 0 || !slices.Equal(p.ClusterPins(), []string{"adult-1"}) {
			t.Fatalf("%s: stored pins %v", when, p.List())
		}
	}
	checkStore("after the forget")
	if _, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"}); grpcCode(err) != codes.NotFound {
		t.Fatalf("forget twice: %v", err)
	}

	// The id registers again: a new node, in service with its own weight.
	m1 := e.startNode("n1", nodeOpts{})
	fresh := func(when string) {
		t.Helper()
		info := e.nodeInfo("n1")
		if !info.Alive || info.Draining || info.Weight != 100 || info.Sessions != 0 || info.Titles != 0 {
			t.Fatalf("%s: n1 %+v, want a fresh node", when, info)
		}
		e.m.mu.Lock()
		holds := e.m.rep.Holds(time.Now())
		e.m.mu.Unlock()
		if len(holds) != 0 {
			t.Fatalf("%s: holds %v", when, holds)
		}
	}
	fresh("registered again")

	// And after a restart on the same data directory.
	m1.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManager(t, dir, nil)
	if e.listed("n1") {
		t.Fatal("n1 listed by the restarted manager before it registered")
	}
	checkStore("after a restart")
	e.startNode("n1", nodeOpts{})
	fresh("registered with the restarted manager")
}

// A node known only by its stored state (a restarted manager it never
// registered with again) can be forgotten: the state goes. A store that
// cannot be read refuses the forget before anything changes.
func TestForgetNodeStoredOnly(t *testing.T) {
	ctx := context.Background()
	e, ds, _ := managerOnDownStore(t)
	n := e.startNode("n1", nodeOpts{})
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	n.leave()
	waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
	ds.down.Store(true)
	if _, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"}); grpcCode(err) != codes.Unavailable ||
		!strings.Contains(err.Error(), "not forgotten") {
		t.Fatalf("forget with the store down: %v", err)
	}
	if !e.listed("n1") {
		t.Fatal("a forget refused for the store forgot the node")
	}
	ds.down.Store(false)

	// Forget the node in memory only, as a restarted manager would not
	// know it: its stored drain is left.
	unlock := e.m.lockBetweenPlans()
	_, _, _, err := e.m.dropNodeLocked("n1", time.Now())
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
	if err != nil || r.Registered || !r.SettingRemoved || !strings.HasPrefix(r.Message, "not registered") {
		t.Fatalf("forget of a stored-only node: %+v %v", r, err)
	}
	if settings, raw := storedSettings(t, e.m.st); len(settings) != 0 {
		t.Fatalf("stored settings %s after the forget", raw)
	}
}

// TestForgetNodeOnASharedStore: two managers share a Redis store. The
// standby exports node series only for the nodes alive there, and
// refuses a forget; the leader forgets a dead node (its drain and pin
// leave the store); the standby, which knew the node, forgets it when it
// takes over, and the id registering there is a new node.
func TestForgetNodeOnASharedStore(t *testing.T) {
	open, _ := sharedRedis(t)
	ctx := context.Background()
	check := open()
	a := newManager(t, "", func(m *Manager) { onShared(open(), &countPlanner{}, time.Minute)(m); withMetrics(m) })
	b := newManager(t, "", func(m *Manager) { onShared(open(), &countPlanner{}, time.Minute)(m); withMetrics(m) })
	n1 := a.startNode("n1", nodeOpts{})
	a.startNode("n2", nodeOpts{})
	if _, err := a.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	// n1 moves to the standby for a while (the front door's address
	// moved), then stops there.
	n1.stop()
	m1 := b.registerWith("n1")
	if got := nodeSeries(scrape(t, b.m), "n1"); !slices.Contains(got, "vodcluster_node_up{node=\"n1\"} 1") {
		t.Fatalf("the standby's series of a node alive there: %v", got)
	}
	if _, err := b.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"}); grpcCode(err) != codes.FailedPrecondition ||
		!strings.Contains(err.Error(), "standby") {
		t.Fatalf("forget on the standby: %v", err)
	}
	m1.leave()
	waitFor(t, 5*time.Second, "n1 out of service on the standby", func() bool { return !b.nodeInfo("n1").Alive })
	waitFor(t, 5*time.Second, "n1 out of service on the leader", func() bool { return !a.nodeInfo("n1").Alive })
	if got := nodeSeries(scrape(t, b.m), "n1"); len(got) != 0 {
		t.Fatalf("the standby exports a node dead there: %v", got)
	}
	if got := nodeSeries(scrape(t, a.m), "n1"); !slices.Contains(got, "vodcluster_node_up{node=\"n1\"} 0") {
		t.Fatalf("the leader's series of the dead node: %v", got)
	}

	r, err := a.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
	if err != nil || !r.SettingRemoved || !slices.Equal(r.UnpinnedTitles, []string{"t1"}) {
		t.Fatalf("forget on the leader: %+v %v", r, err)
	}
	if settings, raw := storedSettings(t, check); len(settings) != 0 {
		t.Fatalf("stored settings %s after the forget", raw)
	}
	if p := storedPins(t, check); p.Len() != 0 {
		t.Fatalf("stored pins %v after the forget", p.List())
	}
	if got := nodeSeries(scrape(t, a.m), "n1"); len(got) != 0 {
		t.Fatalf("the leader's series of the forgotten node: %v", got)
	}
	if !b.listed("n1") {
		t.Fatal("the standby forgot n1 before taking over")
	}

	a.m.Close()
	waitFor(t, 20*testLeaderTTL, "the standby to take over", b.m.Leader)
	waitFor(t, 5*time.Second, "the new leader to forget n1", func() bool { return !b.listed("n1") })
	if got := nodeSeries(scrape(t, b.m), "n1"); len(got) != 0 {
		t.Fatalf("the new leader's series of the forgotten node: %v", got)
	}
	b.registerWith("n1")
	if info := b.nodeInfo("n1"); !info.Alive || info.Draining {
		t.Fatalf("n1 registered with the new leader: %+v, want a fresh node", info)
	}
}

// A node forgotten while cut off (not dead: its viewers play on) that
// comes back under its id still playing a session the forget ended is
// told to end it, as after RestoreGrace: its reservation is gone.
func TestForgottenNodeBackToldToEndItsSessions(t *testing.T) {
	ctx := context.Background()
	e := newManager(t, "", nil)
	n1 := e.startNode("n1", nodeOpts{})
	a := e.admitOne("t1")
	if err := n1.event(a, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n1.stop() // the link is cut; the node plays on
	waitFor(t, 10*time.Second, "n1 dead", func() bool { return !e.nodeInfo("n1").Alive })
	if r, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"}); err != nil || r.SessionsEnded != 1 {
		t.Fatalf("forget: %+v %v", r, err)
	}

	// Back under its id, its reports listing the session from the first.
	back := &fakeNode{t: t, id: "n1", nc: e.nc, cmds: make(chan *pb.NodeCommand, 64), diskFree: 1 << 40, sessions: []string{a}}
	if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n1", RtspAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2",
		Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
	back.heartbeat()
	t.Cleanup(back.stop)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-back.cmds:
			end := c.GetEndSessions()
			if end == nil {
				continue
			}
			if !slices.Equal(end.GetSessionIds(), []string{a}) {
				t.Fatalf("EndSessions %v, want [%s]", end.GetSessionIds(), a)
			}
			if e.session(a) != nil {
				t.Fatal("the ended session is listed again")
			}
			return
		case <-deadline:
			t.Fatal("the node back from a forget was not told to end the session the forget ended")
		}
	}
}

// An eviction the operator orders on a node listed dead after its goodbye
// (it shut down cleanly; its stream not closed yet) waits in its queue
// for the node's return, as its answer says, and a forget drops it. It
// went down the stream the node was closing, where a node shutting down
// does not carry it out (TestForgetNode, under load, saw no command to
// drop).
func TestEvictionAfterAGoodbyeWaitsForTheReturn(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t3", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	n.mute(true) // no report of it revives it
	e.m.mu.Lock()
	ns := e.m.nodes["n1"]
	gen := ns.streamGen
	e.m.mu.Unlock()
	e.m.nodeLeft(ns, gen) // its goodbye, seen before its stream closes
	ack, err := e.admin.Evict(context.Background(), &pb.PlacementRequest{TitleId: "t3", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "when it is back") {
		t.Fatalf("evict on the node that left: %v %v", ack, err)
	}
	// The stream's sender, were it still running, takes the command at
	// once; 300 ms is far beyond that.
	quiet := time.After(300 * time.Millisecond)
	for wait := true; wait; {
		select {
		case c := <-n.cmds:
			if c.GetEvict().GetTitleId() == "t3" {
				t.Fatal("the eviction went down the stream of the node that left")
			}
		case <-quiet:
			wait = false
		}
	}
	e.m.mu.Lock()
	queued := slices.ContainsFunc(ns.queue, func(c *pb.NodeCommand) bool { return c.GetEvict().GetTitleId() == "t3" })
	e.m.mu.Unlock()
	if !queued {
		t.Fatal("the eviction is not queued for the node's return")
	}
}
