package acm

import (
	"context"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// TestPrefetchWhileTheOriginIsDownEvictsNothing: an operator's prefetch
// onto a full node while the origin is unavailable is queued, not
// ordered: the node's titles stay (one was the only copy: evicting it for
// a fill that cannot start made it unplayable until the origin came
// back), and no plan orders it, nor makes room for it, until the origin
// answers; then the plan orders it, room made.
func TestPrefetchWhileTheOriginIsDownEvictsNothing(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.StoragePlanner = smm.PlannerReplicate
		m.OriginCheck = 50 * time.Millisecond
	})
	n := startFullNode(e)
	e.setOriginDown(t)
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "prefetch queued: the origin is unavailable") {
		t.Fatalf("prefetch with the origin down: %v %v, want it queued for the origin", ack, err)
	}
	e.m.plan(e.m.now())
	if got := n.commands(); len(got) != 0 || !n.has("q") || !n.has("r") {
		t.Fatalf("with the origin down the node got %v (holds q %v, r %v), want nothing and both kept", got, n.has("q"), n.has("r"))
	}
	if f := e.fill("n1", "t1"); f == nil || f.State != "queued" {
		t.Fatalf("fill of t1 after a plan with the origin down: %+v, want queued", f)
	}

	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	waitFor(t, 5*time.Second, "the origin seen up", func() bool { return !e.m.originDown.Load() })
	e.m.plan(e.m.now())
	n.waitCommand(t, "prefetch t1", 1)
	if n.count("evict q")+n.count("evict r") != 1 {
		t.Fatalf("commands %v once the origin answers: want one eviction for t1's room", n.commands())
	}
}

// TestNoPrefetchBeforeTheOriginAnswers: a manager started while the
// origin fails its health checks (a restart during an outage) orders no
// prefetch, nor makes room for one, before a check passes: it used to
// plan at once, taking the origin for up until three checks had failed,
// and evicted a title's only copy for a fill that could not start. The
// operator's prefetch is queued meanwhile, saying why (once the origin
// answers, the plan orders it: TestPrefetchWhileTheOriginIsDownEvictsNothing).
func TestNoPrefetchBeforeTheOriginAnswers(t *testing.T) {
	down := startOrigin(t, "127.0.0.1:0", unhinted())
	down.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.StoragePlanner = smm.PlannerReplicate
		m.OriginAddr = down.addr
		m.OriginCheck = time.Hour // one check, at start, which fails: not counted down for long
	})
	n := startFullNode(e)
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "prefetch queued: the origin has not answered since the manager started") {
		t.Fatalf("prefetch before the origin answered: %v %v, want it queued for the origin", ack, err)
	}
	e.m.plan(e.m.now())
	if got := n.commands(); len(got) != 0 || !n.has("q") || !n.has("r") {
		t.Fatalf("before the origin answered the node got %v (holds q %v, r %v), want nothing and both kept", got, n.has("q"), n.has("r"))
	}
}

// startFullNode registers n1, its 2 MB disk full with q and r (1 MB
// each), and waits until the manager has its report and the catalog
// (t1 in it).
func startFullNode(e *env) *simNode {
	e.t.Helper()
	n := e.startSimNode("n1", storageTitles, simOpts{disk: 2_000_000, held: []*pb.StoredTitle{stored("q"), stored("r")}})
	waitFor(e.t, 5*time.Second, "n1's report and the catalog", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes["n1"]
		_, cat := e.m.titles()["t1"]
		return ns != nil && ns.reported && ns.titles["r"] != nil && cat
	})
	return n
}

// TestNoPrefetchAfterAFailedOriginCheck: in an outage's first seconds,
// before three failed checks count the origin unavailable, an operator's
// prefetch onto a full node is queued, not ordered: it evicted a title's
// only copy for a fill that could not start. Viewers are not refused
// meanwhile (vodcluster_origin_up stays 1: one lost answer is not an
// outage); the check that passes again has the plan order it.
func TestNoPrefetchAfterAFailedOriginCheck(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		quietStorage(m)
		m.StoragePlanner = smm.PlannerReplicate
		m.OriginCheck = time.Hour // the test checks
		withMetrics(m)
	})
	n := startFullNode(e)
	hc := healthpb.NewHealthClient(e.m.origin)
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if failed := e.m.checkOrigin(hc, 0, time.Second); failed != 1 || e.m.originDown.Load() {
		t.Fatalf("one failed check: %d failed, origin down %v; want 1, not down", failed, e.m.originDown.Load())
	}
	ack, err := e.admin.Prefetch(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "prefetch queued: the origin did not pass its last health check") {
		t.Fatalf("prefetch after a failed origin check: %v %v, want it queued for the origin", ack, err)
	}
	e.m.plan(e.m.now())
	if got := n.commands(); len(got) != 0 {
		t.Fatalf("after a failed origin check the node got %v, want nothing", got)
	}
	if text := scrape(t, e.m); !strings.Contains(text, "\nvodcluster_origin_up 1\n") {
		t.Fatalf("/metrics after one failed origin check, want vodcluster_origin_up 1:\n%s", text)
	}
	e.origin.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	e.m.checkOrigin(hc, 1, time.Second)
	n.waitCommand(t, "prefetch t1", 1)
}
