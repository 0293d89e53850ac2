package acm

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/boss"
	"vodcluster/acm/store"
	"vodcluster/lsm"
	pb "vodcluster/proto/vodcluster/v1"
)

func TestAdminNodesAndPolicy(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	n := e.startNode("n1", nodeOpts{egress: titleBps, titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	n.registrationProtect(t)
	a := e.admitOne("t1")
	info := e.nodeInfo("n1")
	if !info.Alive || info.Draining || info.Weight != 100 || info.ReservedBps != titleBps || info.Sessions != 1 ||
		info.Titles != 1 || info.Load <= 0 || info.Capacity.EgressBps != titleBps {
		t.Fatalf("node info %+v", info)
	}
	p, err := e.admin.GetPolicy(ctx, &pb.GetPolicyRequest{})
	if err != nil || p.Policy != "lall" || p.StoragePolicy != "gdsf" || p.StoragePlanner != "replicate" ||
		len(p.Available) < 2 || len(p.StorageAvailable) < 5 || p.StorageStats == nil {
		t.Fatalf("policy %+v %v", p, err)
	}
	// An unknown name's refusal names the valid ones in plain words: it
	// began "lsm: unknown policy", the package shown to the operator.
	if _, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "no-such"}); grpcCode(err) != codes.InvalidArgument ||
		status.Convert(err).Message() != `unknown scheduling policy "no-such" (the valid names are `+strings.Join(lsm.Policies(), ", ")+")" {
		t.Fatalf("unknown policy: %v", err)
	}
	// a 10 kB name is not echoed whole (it was)
	if _, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: strings.Repeat("p", 10_000)}); grpcCode(err) != codes.InvalidArgument ||
		len(err.Error()) > 400 || !strings.Contains(err.Error(), "(10000 bytes)") {
		t.Fatalf("a 10 kB policy name: %.500v", err)
	}
	// The answer names the policy it replaced (vodctl policy NAME's
	// "lall → rr" read it by a GetPolicy before, racing another change).
	if p, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"}); err != nil || p.Policy != "rr" || p.PreviousPolicy != "lall" {
		t.Fatalf("set rr: %v %v", p, err)
	}
	if p, err := e.admin.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: "rr"}); err != nil || p.Policy != "rr" || p.PreviousPolicy != "rr" {
		t.Fatalf("set rr again: %v %v", p, err)
	}
	if e.session(a) == nil || e.reserved("n1") != titleBps {
		t.Fatal("policy switch dropped a session")
	}

	// Drain: lsm stops placing there and the node is told.
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "nope", Draining: ptr(true)}); grpcCode(err) != codes.NotFound {
		t.Fatalf("unknown node: %v", err)
	}
	for _, bad := range []string{"", "../n1", strings.Repeat("n", 129)} {
		if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: bad, Draining: ptr(true)}); grpcCode(err) != codes.InvalidArgument {
			t.Errorf("SetNode %q: %v, want InvalidArgument", bad, err)
		}
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr[int32](-1)}); grpcCode(err) != codes.InvalidArgument {
		t.Fatalf("negative weight: %v", err)
	}
	info, err = e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true), Weight: ptr[int32](50)})
	if err != nil || !info.Draining || info.Weight != 50 {
		t.Fatalf("drain: %+v %v", info, err)
	}
	select {
	case cmd := <-n.cmds:
		if cmd.GetDrain() == nil || !cmd.GetDrain().Drain {
			t.Fatalf("command %v", cmd)
		}
	case <-time.After(waitForMin):
		t.Fatal("no drain command")
	}
	if err := n.event(a, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	// The only node drained, the manager just started (its nodes may
	// still be registering): the request waits out the queue deadline.
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("draining node took a session: %d", res.StatusCode)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if res := e.describe("demo", "demo", "t2"); res.StatusCode != base.StatusFound {
		t.Fatalf("back in service: %d", res.StatusCode)
	}
}

func ptr[T any](v T) *T { return &v }

func TestAdminPlacement(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	n := e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 40, Filling: true},
	}})
	n.registrationProtect(t)
	pl, err := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{})
	if err != nil || len(pl.Replicas) != 2 || pl.Replicas[0].TitleId != "t1" || !pl.Replicas[1].Filling {
		t.Fatalf("placement %v %v", pl, err)
	}
	if pl, _ := e.admin.ListPlacement(ctx, &pb.ListPlacementRequest{TitleId: "t2"}); len(pl.Replicas) != 1 {
		t.Fatalf("filtered %v", pl)
	}
	fills, err := e.admin.ListFills(ctx, &pb.ListFillsRequest{})
	if err != nil || len(fills.Fills) != 1 || fills.Fills[0].TitleId != "t2" || fills.Fills[0].StoredBytes != 40 {
		t.Fatalf("fills %v %v", fills, err)
	}
	for name, tc := range map[string]struct {
		req  *pb.PlacementRequest
		evic bool
		want codes.Code
	}{
		"prefetch unknown title": {&pb.PlacementRequest{TitleId: "zz", NodeId: "n1"}, false, codes.NotFound},
		"prefetch unknown node":  {&pb.PlacementRequest{TitleId: "t3", NodeId: "zz"}, false, codes.NotFound},
		"prefetch held title":    {&pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}, false, codes.AlreadyExists},
		"evict unknown node":     {&pb.PlacementRequest{TitleId: "t1", NodeId: "zz"}, true, codes.NotFound},
		"evict title not held":   {&pb.PlacementRequest{TitleId: "t3", NodeId: "n1"}, true, codes.NotFound},
		"evict filling title":    {&pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, true, codes.FailedPrecondition},
	} {
		var err error
		if tc.evic {
			_, err = e.admin.Evict(ctx, tc.req)
		} else {
			_, err = e.admin.Prefetch(ctx, tc.req)
		}
		if grpcCode(err) != tc.want {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	ack, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3"})
	if err != nil || ack.NodeId != "n1" {
		t.Fatalf("prefetch: %v %v", ack, err)
	}
	if cmd := <-n.cmds; cmd.GetPrefetch().GetTitleId() != "t3" {
		t.Fatalf("command %v", cmd)
	}
	// A title someone plays is never evicted.
	a := e.admitOne("t1")
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); grpcCode(err) != codes.FailedPrecondition {
		t.Fatalf("evict while playing: %v", err)
	}
	if err := n.event(a, pb.SessionEvent_KIND_ENDED); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
		t.Fatal(err)
	}
	if cmd := <-n.cmds; cmd.GetEvict().GetTitleId() != "t1" {
		t.Fatalf("command %v", cmd)
	}
}

// Every PlacementAck names its title (title_id), as the request did:
// a script sending several (vodctl --json prefetch, evict, pin) matches
// the answers with it. They carried the node and the message alone.
func TestPlacementAckNamesTitle(t *testing.T) {
	e := newManager(t, "", nil)
	ctx := context.Background()
	e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	for _, c := range []struct {
		what  string
		call  func(context.Context, *pb.PlacementRequest, ...grpc.CallOption) (*pb.PlacementAck, error)
		req   *pb.PlacementRequest
		node  string // the answer's
		msgIn string
	}{
		{"prefetch where the manager chooses", e.admin.Prefetch, &pb.PlacementRequest{TitleId: "t3"}, "n1", "prefetch ordered"},
		{"evict", e.admin.Evict, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}, "n1", "eviction ordered"},
		{"pin to a node", e.admin.Pin, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, "n1", "pinned"},
		{"pin again", e.admin.Pin, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, "n1", "already pinned"},
		{"pin to the cluster", e.admin.Pin, &pb.PlacementRequest{TitleId: "t3"}, "", "pinned"},
		{"unpin", e.admin.Unpin, &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}, "n1", "unpinned"},
	} {
		ack, err := c.call(ctx, c.req)
		if err != nil || ack.GetTitleId() != c.req.TitleId || ack.GetNodeId() != c.node || !strings.Contains(ack.GetMessage(), c.msgIn) {
			t.Errorf("%s: %v %v, want title_id %s, node_id %q, message with %q", c.what, ack, err, c.req.TitleId, c.node, c.msgIn)
		}
	}
}

func TestCatalogLoadedInBackgroundWhenOriginReturns(t *testing.T) {
	// Reserve a port for the origin, start the manager while it is down.
	addr := unusedPortBelowEphemeral(t)
	e := newManager(t, "", func(m *Manager) { m.OriginAddr = addr })
	if r, _ := e.admin.ListTitles(context.Background(), &pb.ListTitlesRequest{}); len(r.Titles) != 0 {
		t.Fatalf("titles without origin: %v", r.Titles)
	}
	e.startNode("n1", nodeOpts{})
	// No catalog yet: unavailable (503, as /healthz says), not an unknown title.
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("before the catalog: %d", res.StatusCode)
	}
	startOrigin(t, addr, testTitles[:2])
	waitFor(t, 10*time.Second, "the catalog", func() bool {
		r, _ := e.admin.ListTitles(context.Background(), &pb.ListTitlesRequest{})
		return len(r.Titles) == 2
	})
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("after the catalog: %d", res.StatusCode)
	}
	if ts, _ := e.m.st.Titles(context.Background()); len(ts) != 2 {
		t.Fatalf("stored catalog %v", ts)
	}
}

func TestCatalogSkipsBadTitles(t *testing.T) {
	e := newManager(t, "", nil)
	e.origin.mu.Lock()
	e.origin.titles = append([]*pb.Title{
		{Id: "bad id", BitrateBps: 1}, {Id: "nobitrate"}, {Id: "t1", BitrateBps: 5, Package: "dup"},
	}, testTitles...)
	e.origin.mu.Unlock()
	if err := e.m.refreshCatalog(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	got := e.m.titles()
	if len(got) != len(testTitles) || got["t1"].BitrateBps != 5 {
		t.Fatalf("catalog %v", got)
	}
}

func TestStartAllOrNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	file, _ := boss.NewFile(DefaultRealm, testUsers())
	m := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: busy.Addr().String(),
		DataDir: dir, Secret: testSecret, BOSS: file, Logger: testLogger(t)}
	if err := m.Start(); err == nil {
		m.Close()
		t.Fatal("started on a busy port")
	}
	// The store is closed again: another manager can open it.
	b, err := store.OpenBadger(dir, nil)
	if err != nil {
		t.Fatalf("store left open: %v", err)
	}
	// A second manager on a data_dir in use is told so, not badger's
	// "Cannot acquire directory lock" text.
	m2 := &Manager{RTSPListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", GRPCListen: "127.0.0.1:0",
		DataDir: dir, Secret: testSecret, BOSS: file, Logger: testLogger(t)}
	if err := m2.Start(); err == nil {
		m2.Close()
		t.Fatal("started on a data_dir in use")
	} else if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), "in use by another process: "+dir) || strings.Contains(err.Error(), "Cannot acquire") {
		t.Fatalf("manager on a data_dir in use: %v", err)
	}
	b.Close()
	for name, m := range map[string]*Manager{
		"no boss":        {DataDir: dir, Secret: testSecret},
		"no data dir":    {BOSS: file, Secret: testSecret},
		"short secret":   {DataDir: dir, BOSS: file, Secret: []byte("short")},
		"unknown policy": {DataDir: dir, BOSS: file, Secret: testSecret, Scheduler: func() (c lsmConfig) { c = defaultLSM(); c.Policy = "zz"; return }()},
		"unknown evict":  {DataDir: dir, BOSS: file, Secret: testSecret, Evictor: "zz"},
		"other realm":    {DataDir: dir, BOSS: file, Secret: testSecret, Realm: "elsewhere"},
		// A negative value is refused, not taken for the default.
		"negative token ttl":       {DataDir: dir, BOSS: file, Secret: testSecret, TokenTTL: -5 * time.Second},
		"negative origin channels": {DataDir: dir, BOSS: file, Secret: testSecret, OriginChannels: -1},
	} {
		m.RTSPListen, m.HTTPListen, m.GRPCListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		if err := m.Start(); err == nil {
			m.Close()
			t.Errorf("%s: started", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestCloseEndsWaitingRequests(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = time.Minute })
	e.startNode("n1", nodeOpts{egress: titleBps})
	e.admitOne("t1")
	got := make(chan base.StatusCode, 1)
	go func() {
		c := e.dialRTSP()
		res, err := c.do(base.Describe, "/vod/t2", basicHeader("demo", "demo"))
		if err != nil {
			got <- 0
			return
		}
		got <- res.StatusCode
	}()
	waitFor(t, 5*time.Second, "the request to queue", func() bool { return e.queued() == 1 })
	done := make(chan error, 1)
	go func() { done <- e.m.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on a waiting request")
	}
	if code := <-got; code != 0 && code != base.StatusServiceUnavailable {
		t.Fatalf("waiting request got %d", code)
	}
}

// A weight outside IPVS's 0..65535 (ipvsadm(8)) and an overload threshold
// below the scheduler's normal limit (or out of [0, 1]) are refused as
// INVALID_ARGUMENT, at SetNode and, for the weight, at Register; the
// node's settings stay as they were.
func TestNodeWeightAndOverloadRange(t *testing.T) {
	e := newManager(t, "", nil)
	e.startNode("n1", nodeOpts{})
	ctx := context.Background()
	for _, w := range []int32{65536, 1 << 30, -1} {
		if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr(w)}); grpcCode(err) != codes.InvalidArgument ||
			!strings.Contains(err.Error(), "out of 0..65535") {
			t.Errorf("weight %d: %v, want InvalidArgument", w, err)
		}
	}
	normal := e.m.sched.Config.Normal // 0.8
	for _, th := range []float64{0.01, normal - 0.05, -0.5, 1.5, math.NaN()} {
		if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Overload: ptr(th)}); grpcCode(err) != codes.InvalidArgument ||
			!strings.Contains(err.Error(), "normal") {
			t.Errorf("overload %v: %v, want InvalidArgument naming the normal limit", th, err)
		}
	}
	if n := e.nodeInfo("n1"); n.Weight != lsm.DefaultWeight || n.Overload != 0 {
		t.Fatalf("refused settings applied: weight %d, overload %v", n.Weight, n.Overload)
	}
	info, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr[int32](65535), Overload: ptr(normal)})
	if err != nil || info.Weight != 65535 || info.Overload != normal {
		t.Fatalf("weight 65535, overload %v: %+v %v", normal, info, err)
	}
	if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Overload: ptr(0.0)}); err != nil {
		t.Fatalf("overload 0 (the default): %v", err)
	}
	req := regReq("n2", "127.0.0.1:3", "", titleBps)
	req.Weight = 65536
	if _, err := e.nc.Register(ctx, req); grpcCode(err) != codes.InvalidArgument {
		t.Fatalf("register with weight 65536: %v", err)
	}
}
