package acm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// evictions records the evictions a manager orders (Manager.evictHook)
// and those of a title in use on its node at that moment (a session
// admitted or playing there, a fill, or a viewer awaited for a fill) or
// pinned there; a prefetch, ordered or under way, that no viewer needs
// is not in use to the operator's eviction, which cancels it
// (cancellablePrefetchLocked).
type evictions struct {
	mu    sync.Mutex
	all   []string // "node/title"
	inUse []string
}

// on returns the hook for m.
func (ev *evictions) on(m *Manager) func(*nodeState, string, string) {
	return func(ns *nodeState, title, reason string) { ev.hook(m, ns, title, reason) }
}

func (ev *evictions) hook(m *Manager, ns *nodeState, title, reason string) {
	st := ns.titles[title]
	used := ns.active[title] > 0 || st.GetSessions() > 0 || st.GetFilling() || ns.awaiting[title] || m.pins.Protects(ns.id, title)
	if used && reason == evictOperator && m.cancellablePrefetchLocked(ns.id, title) != nil {
		used = false
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.all = append(ev.all, ns.id+"/"+title)
	if used {
		ev.inUse = append(ev.inUse, ns.id+"/"+title)
	}
}

func (ev *evictions) list() (all, inUse []string) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return slices.Clone(ev.all), slices.Clone(ev.inUse)
}

// planWith runs one plan at now of e's manager as plan does (planMu held
// by the caller), calling during once the plan is computed and before its
// orders are carried out: what happens there happens while a plan is in
// progress, without mu.
func (e *env) planWith(now time.Time, during func()) {
	m := e.m
	catp := m.catalog.Load()
	m.mu.Lock()
	snap, job := m.startPlanLocked(now)
	m.mu.Unlock()
	job.Run(snap.view(m.planTitlesFor(catp)))
	during()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finishPlanLocked(snap, job, *catp, now)
}

// recheckTitles: "hot" is promoted; a, b and c fill node n1's disk.
var recheckTitles = []*pb.Title{
	{Id: "hot", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids", PopularityPerDay: 5000},
	{Id: "a", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
	{Id: "b", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
	{Id: "c", DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"},
}

// TestPlanOrdersCheckedWhenCarriedOut: a plan is computed without the
// manager's lock from a snapshot, so the cluster moves between the
// snapshot and the orders; each order is checked against the state when
// it is carried out. n1 holds a, b and c on a full disk, and the plan
// evicts one of them to prefetch the promoted "hot". While that plan is
// in progress: front-door admissions go through, and a title they play is
// not evicted (nor is hot prefetched without its room: a failed prefetch,
// retried after its backoff); a fill of hot the node started makes the
// prefetch and its eviction moot; a node that left gets no order. Without
// any of those, the same plan evicts one and prefetches hot.
func TestPlanOrdersCheckedWhenCarriedOut(t *testing.T) {
	held := []*pb.StoredTitle{stored("a"), stored("b"), stored("c")}
	setup := func(t *testing.T) (*env, *simNode, *evictions) {
		ev := &evictions{}
		e := newManagerWith(t, "", recheckTitles, func(m *Manager) {
			fastStorage(m)
			m.PlanInterval = time.Hour
			m.Replicator.RetryBase, m.Replicator.RetryMax = time.Millisecond, time.Millisecond
			m.MaxSessionsPerUser = -1
			m.evictHook = ev.on(m)
		})
		// The test plans: the plan loop waits.
		e.m.planMu.Lock()
		t.Cleanup(e.m.planMu.Unlock)
		n := e.startSimNode("n1", recheckTitles, simOpts{disk: 3_000_000, held: held})
		return e, n, ev
	}
	// onN1 returns n1's titles as the manager sees them and the fills of
	// the Replicator there.
	onN1 := func(e *env) (titles []string, fills []smm.FillStatus) {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		for id := range e.m.nodes["n1"].titles {
			titles = append(titles, id)
		}
		slices.Sort(titles)
		return titles, e.m.rep.Fills()
	}
	untouched := func(t *testing.T, e *env, ev *evictions) []smm.FillStatus {
		t.Helper()
		titles, fills := onN1(e)
		if all, _ := ev.list(); len(all) > 0 {
			t.Fatalf("evictions ordered: %v", all)
		}
		if !slices.Equal(titles, []string{"a", "b", "c"}) {
			t.Fatalf("n1 holds %v as the manager sees it, want a b c untouched", titles)
		}
		return fills
	}
	planned := func(t *testing.T, e *env, n *simNode, ev *evictions) {
		t.Helper()
		e.planWith(time.Now().Add(time.Second), func() {}) // after any backoff (RetryMax)
		n.waitCommand(t, "prefetch hot", 1)
		all, inUse := ev.list()
		if len(all) != 1 || len(inUse) > 0 {
			t.Fatalf("evictions %v (in use: %v), want one of a, b, c", all, inUse)
		}
	}

	t.Run("titles in use", func(t *testing.T) {
		e, n, ev := setup(t)
		var sids []string
		e.planWith(time.Now(), func() {
			if !e.m.rep.Planning() {
				t.Fatal("no plan in progress")
			}
			// The front door admits while the plan is in progress.
			for _, id := range []string{"a", "b", "c"} {
				sid := e.admitOne(id)
				if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
					t.Fatal(err)
				}
				sids = append(sids, sid)
			}
		})
		fills := untouched(t, e, ev)
		if len(fills) != 1 || fills[0].Title != "hot" || fills[0].State != smm.FillBackoff {
			t.Fatalf("fills %+v, want hot's prefetch failed (no room: a, b, c play)", fills)
		}
		for _, sid := range sids {
			if err := n.event(sid, pb.SessionEvent_KIND_ENDED); err != nil {
				t.Fatal(err)
			}
		}
		planned(t, e, n, ev)
	})

	t.Run("title now filling", func(t *testing.T) {
		e, n, ev := setup(t)
		e.planWith(time.Now(), func() {
			// The node started a fill of hot (a viewer's), and reported it.
			n.progress("hot", 100_000)
			r := e.reports("n1")
			waitFor(t, 5*time.Second, "a report with hot filling", func() bool { return e.reports("n1") > r+1 })
		})
		// The prefetch is not ordered; the Replicator follows the fill
		// that is there.
		titles, fills := onN1(e)
		if all, _ := ev.list(); len(all) > 0 || !slices.Equal(titles, []string{"a", "b", "c", "hot"}) {
			t.Fatalf("evictions %v, titles %v: want none, a b c hot", all, titles)
		}
		if len(fills) != 1 || fills[0].Title != "hot" || fills[0].State == smm.FillBackoff {
			t.Fatalf("fills %+v, want hot's, not failed", fills)
		}
		if got := n.count("prefetch hot"); got != 0 {
			t.Fatalf("hot prefetched %d times while it fills", got)
		}
	})

	t.Run("node left", func(t *testing.T) {
		e, n, ev := setup(t)
		e.planWith(time.Now(), func() {
			n.leave()
			waitFor(t, 5*time.Second, "n1 out of service", func() bool { return !e.nodeInfo("n1").Alive })
		})
		fills := untouched(t, e, ev)
		if len(fills) != 1 || fills[0].Title != "hot" || fills[0].State != smm.FillBackoff {
			t.Fatalf("fills %+v, want hot's prefetch failed (node out of service)", fills)
		}
		e.m.mu.Lock()
		queued := len(e.m.nodes["n1"].queue)
		e.m.mu.Unlock()
		if queued != 0 {
			t.Fatalf("%d commands queued for the node that left", queued)
		}
	})

	t.Run("control", func(t *testing.T) {
		e, n, ev := setup(t)
		planned(t, e, n, ev)
	})
}

// TestPlansBesideFrontDoorRace runs plans (the plan loop's every 5 ms and
// a goroutine's back to back) while the front door admits, sessions start
// and end, nodes leave, die, come back and join, and the operator pins,
// unpins, prefetches and evicts: no eviction is ordered of a title in use or pinned on its
// node, no node is told to fill a title it has. Run it with the race detector: the plans' computation reads
// the nodes' maps and the Replicator's copy without the manager's lock.
func TestPlansBesideFrontDoorRace(t *testing.T) {
	const nTitles = 120
	var titles []*pb.Title
	for i := range nTitles {
		ti := &pb.Title{Id: fmt.Sprintf("v%03d", i), DurationS: 20, BitrateBps: titleBps, SizeBytes: 1_000_000, Package: "kids"}
		if i < 4 {
			ti.PopularityPerDay = 500
		}
		titles = append(titles, ti)
	}
	ev := &evictions{}
	e := newManagerWith(t, "", titles, func(m *Manager) {
		fastStorage(m)
		m.PlanInterval, m.ShiftCheck = 5*time.Millisecond, 5*time.Millisecond
		m.MaxSessionsPerUser, m.RequestsPerUser = -1, -1
		m.QueueDeadline = 20 * time.Millisecond
		m.OriginChannels = 16 // room for prefetches beside the viewers' fills
		m.evictHook = ev.on(m)
	})
	auto := simOpts{disk: 5_000_000, egress: 40 * titleBps, before: func(n *simNode) {
		n.smu.Lock()
		n.autoComplete = true
		n.smu.Unlock()
	}}
	var nodesMu sync.Mutex
	nodes := map[string]*simNode{}
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes[id] = e.startSimNode(id, titles, auto)
	}
	// seen reports whether a load report of node showed title stored.
	seen := func(node, title string) bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes[node]
		return ns != nil && ns.titles[title].GetStoredBytes() > 0
	}
	// nodeOf returns the node of session sid, and whether it was placed
	// there with a fill (the node lacked the title).
	nodeOf := func(sid string) (*simNode, bool) {
		e.m.mu.Lock()
		s := e.m.sessions[sid]
		e.m.mu.Unlock()
		if s == nil {
			return nil, false
		}
		nodesMu.Lock()
		defer nodesMu.Unlock()
		return nodes[s.Node], s.Fill
	}

	stop := make(chan struct{})
	var wg, viewers sync.WaitGroup
	var admitted, plans atomic.Int64
	wg.Go(func() {
		for i := 0; i < 100_000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e.m.plan(time.Now())
			plans.Add(1)
			time.Sleep(time.Millisecond) // pacing: the plan loop plans too
		}
	})
	wg.Go(func() {
		// The operator pins and unpins, prefetches and evicts meanwhile.
		rng := rand.New(rand.NewPCG(5, 5))
		for i := 0; i < 200; i++ {
			select {
			case <-stop:
				return
			default:
			}
			req := &pb.PlacementRequest{TitleId: fmt.Sprintf("v%03d", rng.IntN(nTitles))}
			if rng.IntN(2) == 0 {
				req.NodeId = fmt.Sprintf("n%d", 1+rng.IntN(3))
			}
			_, _ = e.admin.Pin(context.Background(), req)
			time.Sleep(10 * time.Millisecond) // pacing
			_, _ = e.admin.Unpin(context.Background(), req)
			other := &pb.PlacementRequest{TitleId: fmt.Sprintf("v%03d", rng.IntN(nTitles)), NodeId: fmt.Sprintf("n%d", 1+rng.IntN(3))}
			if rng.IntN(2) == 0 {
				_, _ = e.admin.Evict(context.Background(), other)
			} else {
				other.NodeId = ""
				_, _ = e.admin.Prefetch(context.Background(), other)
			}
		}
	})
	errs := make(chan error, 3)
	for w := range 3 {
		c := e.dialRTSP()
		viewers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			type playing struct {
				sid, title string
				n          *simNode
				filled     bool // the node filled the title for this viewer
			}
			// end ends p. A title the node filled for the viewer is in the
			// manager's view from the node's next report on; a session that
			// ends before it, unlike one that lasts a heartbeat or more, may
			// leave the manager unaware of the copy (a prefetch there would
			// then be a second order of the title, which a node ignores):
			// the viewers here wait for that report, up to a second.
			end := func(p playing) {
				for i := 0; p.filled && i < 100 && !seen(p.n.id, p.title); i++ {
					time.Sleep(10 * time.Millisecond)
				}
				_ = p.n.event(p.sid, pb.SessionEvent_KIND_ENDED)
			}
			var live []playing
			defer func() {
				for _, p := range live {
					end(p)
				}
			}()
			for i := 0; i < 300; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Favourites move through the catalog.
				id := fmt.Sprintf("v%03d", (i/30*13+int(nTitles*rng.Float64()*rng.Float64()))%nTitles)
				res, err := c.do(base.Describe, "/vod/"+id, basicHeader("demo", "demo"))
				if err != nil {
					errs <- fmt.Errorf("describe %s: %w", id, err)
					return
				}
				if res.StatusCode != base.StatusFound {
					continue // no node could take it now
				}
				admitted.Add(1)
				claims, err := e.signer.Parse(tokenFromLocation(res.Header["Location"][0]))
				if err != nil {
					errs <- err
					return
				}
				n, fill := nodeOf(claims.Session)
				if n == nil {
					continue // ended already (its node died)
				}
				if rng.IntN(4) == 0 {
					_ = n.event(claims.Session, pb.SessionEvent_KIND_ENDED) // never started
					continue
				}
				// The viewer's fill, at once (a viewer placed where the
				// title is ordered plays from the prefetch).
				filled := fill && !n.has(id)
				if filled {
					n.complete(id)
				}
				_ = n.event(claims.Session, pb.SessionEvent_KIND_STARTED)
				live = append(live, playing{claims.Session, id, n, filled})
				if len(live) > 4 {
					end(live[0])
					live = live[1:]
				}
			}
		})
	}

	// Node churn, from the test's goroutine.
	back := func(n *simNode) {
		n.mu.Lock()
		held := slices.Clone(n.titles)
		n.mu.Unlock()
		if _, err := e.nc.Register(context.Background(), &pb.RegisterRequest{NodeId: n.id, RtspAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2",
			Titles: held, Capacity: &pb.NodeCapacity{EgressBps: 40 * titleBps, DiskBytes: n.disk}}); err != nil {
			t.Fatal(err)
		}
		r := e.reports(n.id)
		n.heartbeat()
		waitFor(t, 5*time.Second, n.id+"'s report after it registered again", func() bool { return e.reports(n.id) > r })
	}
	for cycle := range 4 {
		n := nodes[fmt.Sprintf("n%d", 1+cycle%3)]
		if cycle%2 == 0 {
			n.leave() // a clean goodbye: out of service at once
		} else {
			n.stop() // a broken stream: dead after the missed heartbeats
		}
		waitFor(t, 5*time.Second, n.id+" dead", func() bool { return !e.nodeInfo(n.id).Alive })
		back(n)
		if cycle == 1 {
			n4 := e.startSimNode("n4", titles, auto)
			nodesMu.Lock()
			nodes["n4"] = n4
			nodesMu.Unlock()
		}
	}
	viewers.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all, inUse := ev.list()
	if len(inUse) > 0 {
		t.Fatalf("%d evictions of a title in use or pinned: %v", len(inUse), inUse)
	}
	prefetches := 0
	for id, n := range nodes {
		n.smu.Lock()
		doubles := slices.Clone(n.doubles)
		for _, c := range n.log {
			if len(c) > 9 && c[:9] == "prefetch " {
				prefetches++
			}
		}
		n.smu.Unlock()
		if len(doubles) > 0 {
			t.Errorf("node %s told to fill titles it has: %v", id, doubles)
		}
	}
	t.Logf("%d admitted, %d plans (by the test), %d prefetches, %d evictions", admitted.Load(), plans.Load(), prefetches, len(all))
	if admitted.Load() < 200 || plans.Load() < 50 || prefetches < 10 || len(all) < 50 {
		t.Fatalf("too little exercised: %d admitted, %d plans, %d prefetches, %d evictions", admitted.Load(), plans.Load(), prefetches, len(all))
	}
}
