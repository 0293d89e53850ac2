package acm

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// A node's report that says what the last one applied said is steady: the
// manager takes its session counts but leaves the scheduler's view as it
// is (ViewEpoch unchanged). A title gone, a fill placed on the node
// meanwhile (whose viewer never came), a catalog that changed: the next
// report, the same as before, is applied in full and the view follows it.
func TestSteadyLoadReports(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.PlanInterval, m.ShiftCheck, m.PopularitySave, m.CatalogRefresh = time.Hour, time.Hour, time.Hour, time.Hour
		m.Scheduler.HeartbeatInterval = time.Hour
	})
	m := e.m
	held := []*pb.StoredTitle{
		{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
		{TitleId: "t2", SizeBytes: 1_500_000, StoredBytes: 1_500_000},
	}
	ctx := context.Background()
	if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n1", RtspAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2",
		Titles: held, Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	ns := m.nodes["n1"]
	m.mu.Unlock()
	report := func(titles ...*pb.StoredTitle) {
		t.Helper()
		r := &pb.LoadReport{NodeId: "n1", AtUnixMs: time.Now().UnixMilli(), Titles: titles, DiskFreeBytes: 1<<40 - 3_000_000}
		if err := m.report(ns, ns.streamGen, r); err != nil {
			t.Fatal(err)
		}
	}
	state := func() (epoch uint64, steady steadyState, held []string) {
		m.mu.Lock()
		defer m.mu.Unlock()
		n := m.sched.Node("n1")
		for _, id := range []string{"t1", "t2", "t3"} {
			if _, ok := n.Holds(id); ok {
				held = append(held, id)
			}
		}
		return n.ViewEpoch(), ns.steady, held
	}

	report(held...)
	e0, st, h := state()
	if st.print == 0 || !slices.Equal(h, []string{"t1", "t2"}) {
		t.Fatalf("first report: steady state %+v, holds %v", st, h)
	}
	busy := &pb.StoredTitle{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 1_500_000, Sessions: 3, LastAccessUnixMs: 7}
	report(busy, held[1])
	if e1, _, _ := state(); e1 != e0 {
		t.Fatalf("a report with only session counts changed was applied in full (epoch %d -> %d)", e0, e1)
	}
	m.mu.Lock()
	sessions := ns.titles["t1"].GetSessions()
	m.mu.Unlock()
	if sessions != 3 {
		t.Fatalf("steady report: t1 has %d sessions in the manager's view, want the report's 3", sessions)
	}

	// The node lost t2 on its own.
	report(held[0])
	if _, _, h := state(); !slices.Equal(h, []string{"t1"}) {
		t.Fatalf("t2 left the report: holds %v", h)
	}

	// A fill of t3 placed here; its viewer never comes and the operator
	// ends the session. The reports, the same throughout, never listed
	// t3: the view must not keep it.
	res := e.describe("demo", "demo", "t3")
	if res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE t3: %v", res.StatusCode)
	}
	if _, _, h := state(); !slices.Contains(h, "t3") {
		t.Fatalf("the fill placed on n1 is not in the view: %v", h)
	}
	report(held[0]) // the viewer has not arrived: t3 stays, as a fill to come
	if _, err := e.admin.EndSessions(ctx, &pb.EndSessionsRequest{User: "demo", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	report(held[0])
	if _, _, h := state(); !slices.Equal(h, []string{"t1"}) {
		t.Fatalf("after the unused fill's session ended, the same report: holds %v, want [t1]", h)
	}
	report(held[0])
	e2, st, _ := state()
	report(held[0])
	if e3, _, _ := state(); st.print == 0 || e3 != e2 {
		t.Fatalf("quiet again: steady %+v, epoch %d -> %d", st, e2, e3)
	}

	// A placement booked a fill of t3 and was released at once (its
	// client left while queued): the scheduler's view changed outside
	// any report, the manager's session table did not.
	m.mu.Lock()
	_ = m.sched.SetReplica("n1", "t3", true, 1_500_000)
	m.mu.Unlock()
	report(held[0])
	if _, _, h := state(); !slices.Equal(h, []string{"t1"}) {
		t.Fatalf("a fill booked outside the reports, then the same report: holds %v, want [t1]", h)
	}

	// The origin replaced t1: the same report is judged against the new
	// catalog (its copy is stale).
	cat := slices.Collect(maps.Values(m.titles()))
	for i := range cat {
		if cat[i].ID == "t1" {
			cat[i].Version, cat[i].SizeBytes = "v2", 1_600_000
		}
	}
	m.setCatalog(append([]store.Title(nil), cat...))
	report(held[0])
	m.mu.Lock()
	stale := ns.stale["t1"] != nil
	m.mu.Unlock()
	if !stale {
		t.Fatal("after a catalog change, the same report was not judged again: t1's copy of another size is not stale")
	}
}
