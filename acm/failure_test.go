package acm

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// flakyStore fails PutSession while broken is set.
type flakyStore struct {
	store.Store
	broken atomic.Bool
}

func (f *flakyStore) PutSession(ctx context.Context, s store.Session) error {
	if f.broken.Load() {
		return errors.New("disk on fire")
	}
	return f.Store.PutSession(ctx, s)
}

func TestStoreFailureLeavesNoReservation(t *testing.T) {
	b, err := store.OpenBadger(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fs := &flakyStore{Store: b}
	e := newManager(t, "", func(m *Manager) { m.Store = fs })
	e.startNode("n1", nodeOpts{})
	fs.broken.Store(true)
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusServiceUnavailable {
		t.Fatalf("with a broken store: %d", res.StatusCode)
	}
	if got := e.reserved("n1"); got != 0 || len(e.sessions()) != 0 {
		t.Fatalf("reserved %d sessions %v", got, e.sessions())
	}
	fs.broken.Store(false)
	awaitProbe(t, e.m, "/healthz", http.StatusOK, "ok") // ready once the health check's write goes through
	if res := e.describe("demo", "demo", "t1"); res.StatusCode != base.StatusFound {
		t.Fatalf("store back: %d", res.StatusCode)
	}
	// The manager does not close a store it was given.
	e.m.Close()
	if _, _, err := b.Sessions(context.Background()); err != nil {
		t.Fatalf("given store closed: %v", err)
	}
}

// orderPlanner orders one prefetch of t3 on n1 and records what it saw.
type orderPlanner struct {
	mu       sync.Mutex
	observed []string
	views    int
	done     bool
}

func (p *orderPlanner) Observe(title string, _ time.Time) {
	p.mu.Lock()
	p.observed = append(p.observed, title)
	p.mu.Unlock()
}

func (p *orderPlanner) Plan(_ time.Time, v *smm.ClusterView) []smm.Action {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(v.Nodes) == 0 || len(v.Titles) == 0 || p.done {
		return nil
	}
	p.views++
	p.done = true
	return []smm.Action{{Kind: smm.Prefetch, Node: "n1", Title: "t3"}, {Kind: smm.Evict, Node: "n1", Title: "nothing"}}
}

func TestPlannerOrdersReachNode(t *testing.T) {
	p := &orderPlanner{}
	e := newManager(t, "", func(m *Manager) { m.Planner = p; m.PlanInterval = 50 * time.Millisecond })
	n := e.startNode("n1", nodeOpts{})
	n.registrationProtect(t)
	e.admitOne("t1")
	select {
	case cmd := <-n.cmds:
		if cmd.GetPrefetch().GetTitleId() != "t3" {
			t.Fatalf("command %v", cmd)
		}
	case <-time.After(waitForMin):
		t.Fatal("planner's prefetch not sent")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.observed) != 1 || p.observed[0] != "t1" {
		t.Fatalf("planner observed %v", p.observed)
	}
}

func TestNewerHeartbeatStreamReplacesOlder(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{})
	n.registrationProtect(t) // on the first stream, which the registration opened
	gen := func() uint64 {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.nodes["n1"].streamGen
	}
	first := gen() // the node's first report came on it: the stream is taken
	old := n.cmds
	// The node reconnects (a second stream) without the first breaking.
	n.cmds = make(chan *pb.NodeCommand, 64)
	oldCancel, oldDone := n.cancel, n.done
	n.heartbeat()
	defer func() { oldCancel(); <-oldDone }()
	waitFor(t, 5*time.Second, "the second stream to be taken", func() bool { return gen() == first+1 })
	if _, err := e.admin.SetNode(context.Background(), &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	select {
	case cmd := <-n.cmds:
		if !cmd.GetDrain().GetDrain() {
			t.Fatalf("command %v", cmd)
		}
	case cmd := <-old:
		t.Fatalf("command %v went down the replaced stream", cmd)
	case <-time.After(waitForMin):
		t.Fatal("no command on the new stream")
	}
	if !e.nodeInfo("n1").Alive {
		t.Fatal("node dead")
	}
}

// While the origin fails its health checks, a title no node in service
// holds is refused at once (RTSP and HTTP 503 with Retry-After) instead
// of sent to a node to wait for a fill that cannot start; a title a node
// holds is still served there. Once the origin serves again, fills are
// admitted.
func TestOriginDownRefusesTitlesNoNodeHolds(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OriginCheck = 50 * time.Millisecond })
	e.startNode("n1", nodeOpts{titles: []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000}}})
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor(t, 5*time.Second, "the origin seen down", func() bool { return e.m.originDown.Load() })
	res := e.describe("demo", "demo", "t2")
	if res.StatusCode != base.StatusServiceUnavailable || len(res.Header["Retry-After"]) != 1 {
		t.Fatalf("a title no node holds, origin down: %d %v, want 503 with Retry-After", res.StatusCode, res.Header)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.m.HTTPAddr()+"/vod/t2.ts", nil)
	req.SetBasicAuth("demo", "demo")
	hres, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	hres.Body.Close()
	if hres.StatusCode != http.StatusServiceUnavailable || hres.Header.Get("Retry-After") == "" {
		t.Fatalf("HTTP, origin down: %s, want 503 with Retry-After", hres.Status)
	}
	fill := func(id string) bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.sessions[id].Fill
	}
	if id := e.admitOne("t1"); e.session(id).NodeId != "n1" || fill(id) {
		t.Fatalf("a title n1 holds, origin down: %+v", e.session(id))
	}
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	waitFor(t, 5*time.Second, "the origin seen up", func() bool { return !e.m.originDown.Load() })
	if id := e.admitOne("t2"); !fill(id) {
		t.Fatalf("a title no node holds, origin back: %+v, want a fill", e.session(id))
	}
}
