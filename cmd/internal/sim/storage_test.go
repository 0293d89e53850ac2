package sim

import (
	"bytes"
	"testing"

	"vodcluster/smm"
	"vodcluster/smm/bound"
	"vodcluster/smm/boundcheck"
)

// checkStorage asserts the invariants every run keeps, storage included:
// the QoS promise, consistent counts, and the offline bound never above
// what the run fetched (nor below the compulsory fetches, nor above the
// feasible offline schedule).
func checkStorage(t *testing.T, r Result) {
	t.Helper()
	name := r.StoragePolicy + "/" + r.Policy
	if r.QoSViolations != 0 || r.Inconsistencies != 0 || r.UnbalancedReleases != 0 || r.OverCapacity != 0 {
		t.Fatalf("%s: %d QoS violations, %d inconsistencies, lsm anomalies %d/%d", name, r.QoSViolations, r.Inconsistencies,
			r.UnbalancedReleases, r.OverCapacity)
	}
	if r.Requested == 0 || r.Admitted+r.Refused != r.Requested || r.RefusedNoCopy > r.Refused {
		t.Fatalf("%s: requested %d admitted %d refused %d (no copy %d)", name, r.Requested, r.Admitted, r.Refused, r.RefusedNoCopy)
	}
	checkTrace(t, r)
	if r.BoundOriginBytes <= 0 || r.BoundOriginBytes > r.OriginBytes || r.BoundOriginBytes < r.CompulsoryOriginBytes ||
		r.BoundOriginBytes > r.BoundFeasibleOriginBytes || r.BoundInstantOriginBytes <= 0 {
		t.Fatalf("%s: origin %d, bound %d (instant %d, feasible %d, compulsory %d)", name, r.OriginBytes, r.BoundOriginBytes,
			r.BoundInstantOriginBytes, r.BoundFeasibleOriginBytes, r.CompulsoryOriginBytes)
	}
	if got := float64(r.OriginBytes) / float64(r.BoundOriginBytes); got != r.OriginBytesRatioToBound || got < 1 {
		t.Fatalf("%s: ratio %v, want %v", name, r.OriginBytesRatioToBound, got)
	}
	for _, tr := range r.Trace {
		if (tr.Node >= 0) != (tr.End >= tr.T && tr.End > 0) {
			t.Fatalf("%s: trace record %+v", name, tr)
		}
	}
}

// TestStorageInvariantsEveryPolicy runs every storage policy with the
// default scheduler and with rr and wlc on one demand.
func TestStorageInvariantsEveryPolicy(t *testing.T) {
	c := small()
	c.StoragePolicies = smm.StoragePolicies()
	c.Policies = []string{"lall", "rr", "wlc"}
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3*len(c.StoragePolicies) {
		t.Fatalf("%d results", len(rs))
	}
	for i, r := range rs {
		if r.StoragePolicy != c.StoragePolicies[i/3] || r.Policy != c.Policies[i%3] {
			t.Fatalf("result %d is %s/%s", i, r.StoragePolicy, r.Policy)
		}
		checkStorage(t, r)
		// Every run served the same demand: the bounds differ only by
		// what each refused and how long its viewers waited.
		if r.DiskBytes != rs[0].DiskBytes || r.Requested != rs[0].Requested {
			t.Fatalf("%s/%s: disk %d requested %d vs %d %d", r.StoragePolicy, r.Policy, r.DiskBytes, r.Requested, rs[0].DiskBytes, rs[0].Requested)
		}
	}
}

// TestDefaultStorageIsGDSFWithTheReplicator: the default storage policy
// plans (prefetches and evictions carried out), and the moves the
// simulator carried out plus those it could not are the moves smm
// counted.
func TestDefaultStorageIsGDSFWithTheReplicator(t *testing.T) {
	c := small()
	if c.StoragePolicy != "gdsf" || smm.DefaultEvictor != "gdsf" {
		t.Fatalf("default storage policy %q", c.StoragePolicy)
	}
	d := generate(&c, 6)
	e, err := newEngine(&c, d, "lall")
	if err != nil {
		t.Fatal(err)
	}
	if e.rep == nil {
		t.Fatal("no Replicator")
	}
	r, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	checkStorage(t, r)
	st := e.rep.Stats()
	if r.Prefetches == 0 || r.PlacementMoves == 0 || int(r.PlacementMoves+r.PlanRejected) != st.Moves {
		t.Fatalf("prefetches %d, moves %d + rejected %d, smm counted %+v", r.Prefetches, r.PlacementMoves, r.PlanRejected, st)
	}
	// lru caches on demand only.
	c.StoragePolicy = "lru"
	e, _ = newEngine(&c, d, "lall")
	if e.rep != nil {
		t.Fatal("lru has a planner")
	}
	if r, _ := e.run(); r.PlacementMoves != 0 || r.Prefetches != 0 {
		t.Fatalf("lru: %d moves %d prefetches", r.PlacementMoves, r.Prefetches)
	}
}

// TestWarmupWindow: after a warm-up day the figures count the second day
// only, and the bound lets the disks start with anything (no compulsory
// fetch), still below what the run fetched.
func TestWarmupWindow(t *testing.T) {
	c := small()
	c.Days, c.WarmupDays = 2, 1
	c.Policies = []string{"lall"}
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	checkStorage(t, r)
	if r.CompulsoryOriginBytes != 0 || r.WarmupDays != 1 {
		t.Fatalf("warm-up: %+v", r)
	}
	for _, tr := range r.Trace {
		if tr.T < day {
			t.Fatalf("record %+v from the warm-up day", tr)
		}
	}
	// The written trace reproduces the bound with --any-warm.
	var buf bytes.Buffer
	if err := WriteTraceCSV(&buf, r.Trace); err != nil {
		t.Fatal(err)
	}
	recs, err := bound.ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := boundcheck.CheckWith(recs, r.DiskBytes, []string{"lru"}, bound.Options{AnyWarm: true})
	if err != nil || chk.Bound.OriginBytes != r.BoundOriginBytes || chk.Instant.OriginBytes != r.BoundInstantOriginBytes {
		t.Fatalf("bound from the trace %+v %v, run %d/%d", chk.Bound, err, r.BoundOriginBytes, r.BoundInstantOriginBytes)
	}
	c.Days, c.WarmupDays = 1, 0
	one, _ := Run(c)
	if r.Requested < one[0].Requested/2 || r.Requested > 2*one[0].Requested {
		t.Fatalf("day 2 requested %d, day 1 %d", r.Requested, one[0].Requested)
	}
	c.WarmupDays = 1
	if err := c.Validate(); err == nil {
		t.Fatal("a warm-up as long as the run accepted")
	}
}
