package smm

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRetryWithBackoffOnOriginFailure: a prefetch the origin fails is not
// ordered again on that node before its backoff, which doubles per failure
// (jittered in [1/2, 1]) up to RetryMax, and is cleared by a success.
func TestRetryWithBackoffOnOriginFailure(t *testing.T) {
	r := newRep(t, ReplicatorConfig{RetryBase: time.Minute, RetryMax: 8 * time.Minute})
	c := newCluster(1, 1)
	now := offPeak
	seed(t, r, "t00", 1, now)
	want := []Action{{Prefetch, "n0", "t00"}}
	if acts := r.Plan(now, &c.view); !slices.Equal(acts, want) {
		t.Fatalf("first plan %v", acts)
	}
	var waits []time.Duration
	for attempt := 1; attempt <= 6; attempt++ {
		r.FillFailed("n0", "t00", now)
		f := r.Fills()
		if len(f) != 1 || f[0].State != FillBackoff || f[0].Attempts != attempt {
			t.Fatalf("fills after failure %d: %+v", attempt, f)
		}
		wait := f[0].NextTry.Sub(now)
		step := min(time.Minute<<(attempt-1), 8*time.Minute)
		if wait < step/2 || wait > step {
			t.Fatalf("failure %d: retry after %v, want in [%v, %v]", attempt, wait, step/2, step)
		}
		waits = append(waits, wait)
		// Not before the retry time, even off-peak with free channels.
		if acts := r.Plan(now.Add(wait-time.Second), &c.view); len(acts) != 0 {
			t.Fatalf("failure %d: ordered %v during backoff", attempt, acts)
		}
		now = now.Add(wait)
		if acts := r.Plan(now, &c.view); !slices.Equal(acts, want) {
			t.Fatalf("failure %d: retry %v", attempt, acts)
		}
	}
	if s := r.Stats(); s.Retries != 6 || s.FillsFailed != 6 || s.Prefetches != 7 {
		t.Fatalf("stats %+v", s)
	}
	// Success: the title appears complete, the state is gone.
	c.apply(t, want)
	r.Plan(now.Add(time.Second), &c.view)
	if f := r.Fills(); len(f) != 0 || r.Stats().FillsDone != 1 {
		t.Fatalf("after success fills %+v stats %+v", f, r.Stats())
	}
	t.Logf("waits %v", waits)
}

// TestFillFailureSeenInView: a prefetch that shows up filling and then
// vanishes, or never shows up within FillTimeout, counts as failed.
func TestFillFailureSeenInView(t *testing.T) {
	r := newRep(t, ReplicatorConfig{FillTimeout: time.Minute})
	c := newCluster(1, 1)
	seed(t, r, "t00", 1, offPeak)
	r.Plan(offPeak, &c.view)
	n := c.node("n0")
	n.Items = []Item{{Title: "t00", Bytes: 1 << 30, InUse: true, Filling: true}}
	n.Fills = 1
	if acts := r.Plan(offPeak.Add(time.Second), &c.view); len(acts) != 0 {
		t.Fatalf("second fill ordered: %v", acts)
	}
	if f := r.Fills(); len(f) != 1 || f[0].State != FillFilling {
		t.Fatalf("fills %+v", f)
	}
	n.Items, n.Fills = nil, 0 // the fill broke
	if acts := r.Plan(offPeak.Add(2*time.Second), &c.view); len(acts) != 0 {
		t.Fatalf("ordered again at once: %v", acts)
	}
	if f := r.Fills(); len(f) != 1 || f[0].State != FillBackoff {
		t.Fatalf("fills %+v", f)
	}
	// Never seen: failed after the timeout.
	r2 := newRep(t, ReplicatorConfig{FillTimeout: time.Minute})
	seed(t, r2, "t00", 1, offPeak)
	r2.Plan(offPeak, &c.view)
	r2.Plan(offPeak.Add(30*time.Second), &c.view)
	if f := r2.Fills(); f[0].State != FillOrdered {
		t.Fatalf("fills %+v", f)
	}
	r2.Plan(offPeak.Add(61*time.Second), &c.view)
	if f := r2.Fills(); f[0].State != FillBackoff || r2.Stats().FillsFailed != 1 {
		t.Fatalf("fills %+v", f)
	}
}

// TestNeverTwoFillsOfOneTitleOnOneNode: an ordered prefetch not yet
// visible, a fill on demand in progress, or an operator's prefetch all
// keep Plan from ordering the same title on the same node.
func TestNeverTwoFillsOfOneTitleOnOneNode(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(1, 2)
	seed(t, r, "t00", 1, offPeak)
	seed(t, r, "t01", 1, offPeak)
	c.node("n0").Items = []Item{{Title: "t01", Bytes: 1 << 30, InUse: true, Filling: true}}
	c.node("n0").Fills = 1
	acts := r.Plan(offPeak, &c.view)
	if !slices.Equal(acts, []Action{{Prefetch, "n0", "t00"}}) {
		t.Fatalf("actions %v", acts)
	}
	for i := range 5 {
		if acts := r.Plan(offPeak.Add(time.Duration(i+1)*time.Second), &c.view); len(acts) != 0 {
			t.Fatalf("plan %d ordered %v", i, acts)
		}
	}
	r2 := newRep(t, ReplicatorConfig{})
	seed(t, r2, "t00", 1, offPeak)
	r2.Prefetched("n0", "t00", 1<<30, offPeak)
	if acts := r2.Plan(offPeak, &c.view); slices.Contains(acts, Action{Prefetch, "n0", "t00"}) {
		t.Fatalf("operator's prefetch ordered again: %v", acts)
	}
}

// TestPerNodeFillLimit: no node gets more fills than MaxFillsPerNode,
// counting those already in progress.
func TestPerNodeFillLimit(t *testing.T) {
	r := newRep(t, ReplicatorConfig{MaxFillsPerNode: 3})
	c := newCluster(2, 20)
	for i := range 20 {
		seed(t, r, titleID(i), 0.1, offPeak)
	}
	c.node("n1").Fills = 2
	acts := r.Plan(offPeak, &c.view)
	per := map[string]int{}
	for _, a := range acts {
		if a.Kind == Prefetch {
			per[a.Node]++
		}
	}
	if per["n0"] != 3 || per["n1"] != 1 {
		t.Fatalf("prefetches per node %v, want n0 3 and n1 1", per)
	}
}

func titleID(i int) string { return "t" + string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// TestOffPeakPreference: outside the off-peak window an extra replica
// whose copies carry today's demand waits, while one whose copies do not,
// or a title nobody holds, is prefetched, within PeakOriginShare of the
// free channels; in the window everything planned is ordered, with all
// free channels but one (left for a viewer's fill of a cold title), or
// the only one free.
func TestOffPeakPreference(t *testing.T) {
	// t00 is held by n0 and planned for 2 replicas (8 Gbit/s at the
	// remembered peak; one copy carries 7 Gbit/s at the target);
	// t01..t03 are held nowhere.
	for _, tc := range []struct {
		now    time.Time
		free   int
		t00    float64 // req/s now (4 Gbit/s each)
		absent float64 // req/s of t01..t03
		wantN  int
		with   bool // t00's second replica ordered
	}{
		{peak, 2, 1.6, 0.01, 1, false}, // half of 2 channels: one absent title
		{peak, 2, 1.6, 0, 0, false},    // its copy carries 6.4 Gbit/s: wait
		{peak, 2, 2.0, 0, 1, true},     // 8 Gbit/s: above its copy: urgent
		{offPeak, 5, 1.6, 0.01, 4, true},
		{offPeak, 4, 1.6, 0.01, 3, false}, // the absent titles first
		{offPeak, 1, 1.6, 0, 1, true},
	} {
		r := newRep(t, ReplicatorConfig{PeakOriginShare: 0.5})
		c := newCluster(4, 4)
		c.node("n0").Items = []Item{{Title: "t00", Bytes: 1 << 30}}
		before := tc.now.Add(-time.Hour)
		seed(t, r, "t00", 2, before)
		r.Plan(before, &ClusterView{Titles: c.view.Titles, Nodes: c.view.Nodes}) // no channel free
		if _, k := r.PlannedNodes("t00"); k != 2 {
			t.Fatalf("t00 planned for %d replicas", k)
		}
		seed(t, r, "t00", tc.t00, tc.now)
		for _, x := range []string{"t01", "t02", "t03"} {
			seed(t, r, x, tc.absent, tc.now)
		}
		c.view.OriginFree = tc.free
		acts := r.Plan(tc.now, &c.view)
		has := slices.ContainsFunc(acts, func(a Action) bool { return a.Title == "t00" && a.Kind == Prefetch })
		if len(acts) != tc.wantN || has != tc.with {
			t.Fatalf("%+v: actions %v", tc, acts)
		}
	}
}

func TestReplicatorConfigErrors(t *testing.T) {
	for _, cfg := range []ReplicatorConfig{
		{TargetUtilization: 1.5},
		{AddAbove: 0.5, DropBelow: 0.8},
		{DiskFill: -1},
		{KeepBonus: 0.5},
		{MaxFillsPerNode: -1},
		{RetryBase: time.Hour, RetryMax: time.Minute},
		{PeakOriginShare: 2},
		{OffPeak: Window{Start: 25 * time.Hour}},
	} {
		if _, err := NewReplicator(cfg, nil); err == nil || !strings.Contains(err.Error(), "replicator") {
			t.Fatalf("%+v accepted (%v)", cfg, err)
		}
	}
	if _, err := NewStorage("nope", StorageConfig{}); err == nil {
		t.Fatal("unknown storage policy accepted")
	}
	if _, err := NewStorage("lru", StorageConfig{Planner: "magic"}); err == nil {
		t.Fatal("unknown planner accepted")
	}
	st, err := NewStorage("lru", StorageConfig{})
	if err != nil || st.Replicator != nil || st.Planner != (NoPlanner{}) {
		t.Fatalf("lru storage %+v %v", st, err)
	}
	if st, _ := NewStorage("", StorageConfig{}); st.Name != "gdsf" || st.Replicator == nil {
		t.Fatalf("default storage %+v", st)
	}
	if st.Evictor("a") != st.Evictor("a") || st.Evictor("a") == st.Evictor("b") {
		t.Fatal("one evictor per node")
	}
}

func TestWindow(t *testing.T) {
	w := Window{Start: 22 * time.Hour, End: 6 * time.Hour}
	for h, want := range map[int]bool{21: false, 22: true, 23: true, 0: true, 5: true, 6: false, 12: false} {
		if got := w.Contains(time.Date(2027, 1, 1, h, 0, 0, 0, time.UTC), nil); got != want {
			t.Fatalf("%02d:00 in %v: %v", h, w, got)
		}
	}
	if (Window{}).Contains(peak, nil) {
		t.Fatal("empty window contains")
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err == nil && !(Window{Start: 2 * time.Hour, End: 3 * time.Hour}).Contains(time.Date(2027, 1, 1, 1, 30, 0, 0, time.UTC), paris) {
		t.Fatal("location ignored")
	}
}

// TestPlanDeterministic: the same history and view give the same orders.
func TestPlanDeterministic(t *testing.T) {
	run := func() []Action {
		r := newRep(t, ReplicatorConfig{})
		c := newCluster(5, 30)
		for i := range 30 {
			seed(t, r, titleID(i), 1/float64(i+1), offPeak)
		}
		var all []Action
		for i := range 5 {
			acts := r.Plan(offPeak.Add(time.Duration(i)*time.Minute), &c.view)
			c.apply(t, acts)
			all = append(all, acts...)
		}
		return all
	}
	a, b := run(), run()
	if !slices.Equal(a, b) || len(a) == 0 {
		t.Fatalf("runs differ or empty:\n%v\n%v", a, b)
	}
}

func TestPlanBadView(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	if acts := r.Plan(offPeak, nil); acts != nil {
		t.Fatal(acts)
	}
	seed(t, r, "t00", 1, offPeak)
	v := &ClusterView{
		Titles: map[string]TitleInfo{"t00": {ID: "t00", Bytes: 1 << 30, Bitrate: 4e6, Duration: 10}},
		Nodes: []NodeView{
			{ID: "dead", Alive: false, DiskBytes: 1 << 40, EgressBps: 1e9},
			{ID: "", Alive: true, DiskBytes: 1 << 40, EgressBps: 1e9},
			{ID: "tiny", Alive: true, DiskBytes: 1 << 20, EgressBps: 1e9, Items: []Item{{Title: ""}, {Title: "x", Bytes: -5}}},
			{ID: "tiny", Alive: true, DiskBytes: 1 << 40, EgressBps: 1e9},
		},
		OriginFree: -3,
	}
	if acts := r.Plan(offPeak, v); len(acts) != 0 {
		t.Fatalf("orders on a view with no usable node: %v", acts)
	}
	v.OriginFree = 1
	if acts := r.Plan(offPeak, v); len(acts) != 0 {
		t.Fatalf("orders %v: the only alive node's disk is too small", acts)
	}
	// A catalog entry with a nonsensical duration does not poison the
	// plan of the others.
	c := newCluster(1, 2)
	c.view.Titles["t00"] = TitleInfo{ID: "t00", Bytes: 1 << 30, Bitrate: 4e6, Duration: math.NaN()}
	r = newRep(t, ReplicatorConfig{})
	seed(t, r, "t00", 1, offPeak)
	seed(t, r, "t01", 0.5, offPeak)
	if acts := r.Plan(offPeak, &c.view); len(acts) != 2 {
		t.Fatalf("orders %v, want both titles", acts)
	}
}

// TestOperatorPrefetchSurvivesItsNodesDeath: an operator's prefetch on a
// node that dies while it fills is not forgotten: it waits in backoff
// and is ordered again once the node is back and its backoff ended.
func TestOperatorPrefetchSurvivesItsNodesDeath(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 3)
	now := offPeak
	r.Prefetched("n1", "t00", 1<<30, now)
	c.node("n1").Alive = false
	now = now.Add(time.Minute)
	r.Plan(now, &c.view)
	fs := r.Fills()
	if len(fs) != 1 || fs[0].Node != "n1" || fs[0].State != FillBackoff || fs[0].Attempts != 1 {
		t.Fatalf("the operator's prefetch on a dead node: %+v, want it in backoff", fs)
	}
	c.node("n1").Alive = true
	if acts := r.Plan(fs[0].NextTry.Add(time.Second), &c.view); !slices.Contains(acts, Action{Kind: Prefetch, Node: "n1", Title: "t00"}) {
		t.Fatalf("not ordered again when its node is back: %v", acts)
	}
}

// TestQueuedOperatorPrefetch: an operator's prefetch queued for a fill
// slot is listed as queued, not ordered while its node is at
// MaxFillsPerNode, ordered ahead of the plan's own prefetches once a slot
// frees (not counted as a retry), and dropped by CancelPrefetch.
func TestQueuedOperatorPrefetch(t *testing.T) {
	r := newRep(t, ReplicatorConfig{MaxFillsPerNode: 1})
	c := newCluster(1, 3)
	now := offPeak
	seed(t, r, "t01", 5, now) // the plan's own candidate
	r.Queued("n0", "t02", 1<<30, now)
	if fs := r.Fills(); len(fs) != 1 || fs[0].State != FillQueued || !fs[0].NextTry.IsZero() {
		t.Fatalf("fills %+v, want one queued", fs)
	}
	c.node("n0").Fills = 1
	if acts := r.Plan(now.Add(time.Second), &c.view); len(acts) != 0 {
		t.Fatalf("orders %v on a node at its fill limit", acts)
	}
	c.node("n0").Fills = 0
	acts := r.Plan(now.Add(2*time.Second), &c.view)
	if len(acts) != 1 || acts[0] != (Action{Kind: Prefetch, Node: "n0", Title: "t02"}) {
		t.Fatalf("orders %v, want the queued prefetch first and alone (one slot)", acts)
	}
	if s := r.Stats(); s.Retries != 0 {
		t.Fatalf("a queued prefetch ordered counts as a retry: %+v", s)
	}
	r.Queued("n0", "t00", 1<<30, now)
	if !r.CancelPrefetch("n0", "t00", false) || slices.ContainsFunc(r.Fills(), func(f FillStatus) bool { return f.Title == "t00" }) {
		t.Fatalf("queued prefetch not cancelled: %+v", r.Fills())
	}
}

// TestOperatorPrefetchRetriedWhereThePlanWantsIt: the operator's failed
// prefetch of a title the plan also wants on that node, with too little
// demand for the plan to fill it there itself (at the peak, no copy, a
// request or two expected), is ordered again when its backoff ends: the
// plan's own candidate of the pair takes the operator's urgency instead
// of being skipped.
func TestOperatorPrefetchRetriedWhereThePlanWantsIt(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(1, 1)
	now := peak
	seed(t, r, "t00", 1e-4, now) // a viewer asked once: planned on n0, not worth a fill at the peak
	if acts := r.Plan(now, &c.view); len(acts) != 0 {
		t.Fatalf("the plan's own orders %v, want none (too little demand)", acts)
	}
	if !r.Planned("n0", "t00") {
		t.Fatal("t00 not planned on n0: the test does not reach its case")
	}
	r.Prefetched("n0", "t00", 1<<30, now)
	r.FillFailed("n0", "t00", now) // the origin stalled
	fs := r.Fills()
	if len(fs) != 1 || fs[0].State != FillBackoff {
		t.Fatalf("fills %+v, want the operator's prefetch in backoff", fs)
	}
	if acts := r.Plan(fs[0].NextTry.Add(time.Second), &c.view); !slices.Equal(acts, []Action{{Prefetch, "n0", "t00"}}) {
		t.Fatalf("after its backoff: orders %v, want the operator's prefetch again", acts)
	}
}

// TestQueuedPrefetchOrderedByTheOperator: an operator's prefetch queued
// for a fill slot and then ordered by the operator (a slot free by then:
// Prefetched) is ordered, no longer queued; failed, it is in backoff with
// its next try, not listed queued with none.
func TestQueuedPrefetchOrderedByTheOperator(t *testing.T) {
	r := newRep(t, ReplicatorConfig{MaxFillsPerNode: 1})
	now := offPeak
	r.Queued("n0", "t02", 1<<30, now)
	r.Prefetched("n0", "t02", 1<<30, now.Add(time.Second))
	if fs := r.Fills(); len(fs) != 1 || fs[0].State != FillOrdered {
		t.Fatalf("fills %+v, want one ordered", fs)
	}
	r.FillFailed("n0", "t02", now.Add(2*time.Second))
	if fs := r.Fills(); len(fs) != 1 || fs[0].State != FillBackoff || fs[0].NextTry.IsZero() || fs[0].Attempts != 1 {
		t.Fatalf("fills %+v, want one in backoff after 1 attempt", fs)
	}
}
