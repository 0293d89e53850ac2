package acm

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// popularity is e's ListPopularity answer to req.
func (e *env) popularity(req *pb.ListPopularityRequest) *pb.ListPopularityResponse {
	e.t.Helper()
	r, err := e.admin.ListPopularity(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// popularityOf is title's entry in r, nil when r lacks it.
func popularityOf(r *pb.ListPopularityResponse, title string) *pb.TitlePopularity {
	for _, p := range r.GetTitles() {
		if p.TitleId == title {
			return p
		}
	}
	return nil
}

// perHour is the request rate, in requests per hour, of k requests just
// made with the default half-life of 3 h: k * ln 2 / 3.
func perHour(k int) float64 { return float64(k) * math.Ln2 / 3 }

// within reports whether got is want less at most 1% (the decay since
// the requests), and not more.
func within(got, want float64) bool { return got <= want*(1+1e-9) && got >= 0.99*want }

// ListPopularity ranks the titles by the demand the planner learnt from
// real admissions: the promoted title (its catalog hint of 5000 requests
// a day, 208 an hour, a prior) first, then by requests; each with its
// rate, its demand by Little's law (rate * half the 20 s duration * 600
// kbit/s: no session ended), the hint, the plan's replica on n1 and the
// complete copies (t2 and t1 held, t3 filling for its viewer, hot being
// prefetched); the limit cuts the list, the total counts the rest; a
// filter gives one title with its rank, or a title of the catalog never
// requested without one.
func TestListPopularityRanksLearntDemand(t *testing.T) {
	e := newManagerWith(t, "", storageTitles, func(m *Manager) { fastStorage(m); m.MaxSessionsPerUser = -1 })
	e.startSimNode("n1", storageTitles, simOpts{egress: 100 * titleBps, held: []*pb.StoredTitle{stored("t2"), stored("t1")}})
	// Lists read meanwhile (a copy of the popularity, read without the
	// manager's lock: the race detector watches them).
	done, listed := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				listed <- nil
				return
			default:
			}
			if _, err := e.admin.ListPopularity(context.Background(), &pb.ListPopularityRequest{}); err != nil {
				listed <- err
				return
			}
		}
	}()
	for title, k := range map[string]int{"t2": 6, "t1": 3, "t3": 1} {
		for range k {
			e.admitOne(title)
		}
	}
	close(done)
	if err := <-listed; err != nil {
		t.Fatalf("ListPopularity during the admissions: %v", err)
	}
	var r *pb.ListPopularityResponse
	waitFor(t, 5*time.Second, "a plan with the requested titles and the promoted one", func() bool {
		r = e.popularity(&pb.ListPopularityRequest{})
		for _, id := range []string{"hot", "t2", "t1", "t3"} {
			if p := popularityOf(r, id); p == nil || p.PlannedReplicas == 0 {
				return false
			}
		}
		return true
	})
	var order []string
	for _, p := range r.Titles {
		order = append(order, p.TitleId)
	}
	if want := []string{"hot", "t2", "t1", "t3"}; !slices.Equal(order, want) || r.Total != 4 {
		t.Fatalf("ranking %v of %d titles, want %v of 4", order, r.Total, want)
	}
	demand := func(perH float64) float64 { return perH / 3600 * 10 * titleBps }
	for i, c := range []struct {
		id       string
		perH     float64
		hint     float64
		complete int32
	}{{"hot", 5000.0 / 24, 5000, 0}, {"t2", perHour(6), 0, 1}, {"t1", perHour(3), 0, 1}, {"t3", perHour(1), 0, 0}} {
		p := r.Titles[i]
		if p.Rank != int32(i+1) || !within(p.RequestsPerHour, c.perH) || p.MeanSessionS != 10 || !within(p.DemandBps, demand(c.perH)) {
			t.Errorf("%s: rank %d, %.4g req/h, mean session %g s, demand %.4g bit/s; want rank %d, %.4g req/h, 10 s, %.4g bit/s",
				c.id, p.Rank, p.RequestsPerHour, p.MeanSessionS, p.DemandBps, i+1, c.perH, demand(c.perH))
		}
		if p.PeakDemandBps < p.DemandBps || p.PeakDemandBps > 1.01*p.DemandBps {
			t.Errorf("%s: peak demand %.4g bit/s, want its demand %.4g (the peak is now)", c.id, p.PeakDemandBps, p.DemandBps)
		}
		if p.CatalogPopularityPerDay != c.hint || p.PlannedReplicas != 1 || !slices.Equal(p.PlannedNodes, []string{"n1"}) || p.CompleteCopies != c.complete || p.Pinned {
			t.Errorf("%s: hint %g, planned %d on %v, %d complete, pinned %v; want hint %g, 1 on n1, %d complete, not pinned",
				c.id, p.CatalogPopularityPerDay, p.PlannedReplicas, p.PlannedNodes, p.CompleteCopies, p.Pinned, c.hint, c.complete)
		}
	}
	if want := demand(5000.0/24 + perHour(10)); !within(r.DemandBps, want) || r.PeakDemandBps < r.DemandBps {
		t.Errorf("cluster demand %.4g, peak %.4g bit/s; want %.4g and at least that", r.DemandBps, r.PeakDemandBps, want)
	}
	if r.HalfLifeS != 3*3600 || r.ValueHalfLifeS != 24*3600 || r.RestoredUnixMs != 0 || r.SavedUnixMs != 0 || r.Standby {
		t.Errorf("half-lives %g and %g s, restored %d, saved %d, standby %v; want 3 h and 24 h, nothing restored or saved, active",
			r.HalfLifeS, r.ValueHalfLifeS, r.RestoredUnixMs, r.SavedUnixMs, r.Standby)
	}

	if top := e.popularity(&pb.ListPopularityRequest{Limit: 2}); len(top.Titles) != 2 || top.Titles[0].TitleId != "hot" || top.Titles[1].TitleId != "t2" || top.Total != 4 {
		t.Errorf("limit 2: %v of %d, want hot and t2 of 4", top.Titles, top.Total)
	}
	if one := e.popularity(&pb.ListPopularityRequest{TitleId: "t1"}); len(one.Titles) != 1 || one.Titles[0].TitleId != "t1" || one.Titles[0].Rank != 3 {
		t.Errorf("t1 alone: %v, want t1 at rank 3", one.Titles)
	}
	cold := e.popularity(&pb.ListPopularityRequest{TitleId: "p"})
	if len(cold.Titles) != 1 || cold.Titles[0].Rank != 0 || cold.Titles[0].RequestsPerHour != 0 || cold.Titles[0].MeanSessionS != 10 || cold.Titles[0].PlannedReplicas != 0 {
		t.Errorf("p, in the catalog and never requested: %v, want it without rank, rate or replica, its mean session 10 s", cold.Titles)
	}
}

// ListPopularity refuses what it cannot answer: a negative limit
// (INVALID_ARGUMENT), a title it knows nothing of (NOT_FOUND), and, on a
// manager without the storage planner, any request (FAILED_PRECONDITION),
// each saying why.
func TestListPopularityRefusals(t *testing.T) {
	ctx := context.Background()
	e := newManagerWith(t, "", storageTitles, nil)
	for _, c := range []struct {
		req  *pb.ListPopularityRequest
		code codes.Code
		msg  string
	}{
		{&pb.ListPopularityRequest{Limit: -1}, codes.InvalidArgument, "limit -1: want 0"},
		{&pb.ListPopularityRequest{TitleId: "nope"}, codes.NotFound, `title "nope" is not in the catalog`},
	} {
		_, err := e.admin.ListPopularity(ctx, c.req)
		if status.Code(err) != c.code || !strings.Contains(status.Convert(err).Message(), c.msg) {
			t.Errorf("%v: %v, want %v saying %q", c.req, err, c.code, c.msg)
		}
	}
	off := newManagerWith(t, "", storageTitles, func(m *Manager) { m.StoragePlanner = smm.PlannerNone })
	_, err := off.admin.ListPopularity(ctx, &pb.ListPopularityRequest{})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "the storage planner is none, not replicate") {
		t.Errorf("storage planner none: %v, want FAILED_PRECONDITION saying so", err)
	}
}

// The popularity snapshot's times: a manager saves it when it stops and
// says when (saved_unix_ms); the manager started again on its store
// restores it, says when it was taken (restored_unix_ms) and lists the
// rates learnt before (less their decay).
func TestListPopularitySnapshotTimes(t *testing.T) {
	dir := t.TempDir()
	noCap := func(m *Manager) { fastStorage(m); m.MaxSessionsPerUser = -1 }
	e := newManagerWith(t, dir, unhinted(), noCap)
	e.startSimNode("n1", storageTitles, simOpts{egress: 100 * titleBps})
	for range 4 {
		e.admitOne("t2")
	}
	before := time.Now()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	saved := e.m.popSavedMs.Load()
	if saved < before.UnixMilli() || saved > time.Now().UnixMilli() {
		t.Fatalf("saved at %d, want when the manager stopped (%d to now)", saved, before.UnixMilli())
	}
	e = newManagerWith(t, dir, unhinted(), noCap)
	r := e.popularity(&pb.ListPopularityRequest{})
	if r.RestoredUnixMs != saved || r.SavedUnixMs != 0 {
		t.Errorf("restored %d, saved %d; want the snapshot's time %d, and nothing saved yet", r.RestoredUnixMs, r.SavedUnixMs, saved)
	}
	if p := popularityOf(r, "t2"); p == nil || p.Rank != 1 || !within(p.RequestsPerHour, perHour(4)) {
		t.Errorf("t2 after the restart: %v, want rank 1 at %.4g req/h", p, perHour(4))
	}
}

// On a pair of managers sharing a store, the standby says it is one and
// lists the popularity it restored at its start: the active manager's
// snapshot, with the time it was taken; the active manager's list is its
// own, with the time it saved it.
func TestListPopularityOnStandby(t *testing.T) {
	open, _ := sharedRedis(t)
	conf := func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		m.MaxSessionsPerUser = -1
	}
	a := newManagerWith(t, "", unhinted(), conf)
	a.startSimNode("n1", storageTitles, simOpts{egress: 100 * titleBps})
	for range 3 {
		a.admitOne("t1")
	}
	a.m.savePopularity(time.Now().Add(stateWriteWait))
	ra := a.popularity(&pb.ListPopularityRequest{})
	if ra.Standby || ra.SavedUnixMs == 0 || ra.RestoredUnixMs != 0 {
		t.Fatalf("active: standby %v, saved %d, restored %d; want active, saved, nothing restored", ra.Standby, ra.SavedUnixMs, ra.RestoredUnixMs)
	}
	b := newManagerWith(t, "", unhinted(), conf)
	if b.m.Leader() {
		t.Fatal("the second manager holds the planner lock")
	}
	rb := b.popularity(&pb.ListPopularityRequest{})
	if !rb.Standby || rb.RestoredUnixMs != ra.SavedUnixMs {
		t.Errorf("standby: standby %v, restored %d; want standby, the active manager's snapshot of %d", rb.Standby, rb.RestoredUnixMs, ra.SavedUnixMs)
	}
	if p := popularityOf(rb, "t1"); p == nil || !within(p.RequestsPerHour, perHour(3)) {
		t.Errorf("standby: t1 %v, want the active manager's %.4g req/h", p, perHour(3))
	}
}
