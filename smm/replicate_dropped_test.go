package smm

import (
	"slices"
	"testing"
	"time"
)

// droppedOnly checks that DroppedPrefetches returns the one drop of t01 on
// n0 with why (and attempts), and nothing at the next call.
func droppedOnly(t *testing.T, r *Replicator, why string, attempts int) {
	t.Helper()
	want := []DroppedPrefetch{{Node: "n0", Title: "t01", Attempts: attempts, Why: why}}
	if got := r.DroppedPrefetches(); !slices.Equal(got, want) {
		t.Fatalf("dropped %+v, want %+v", got, want)
	}
	if got := r.DroppedPrefetches(); len(got) != 0 {
		t.Fatalf("dropped again: %+v", got)
	}
	for _, f := range r.Fills() {
		if f.Node == "n0" && f.Title == "t01" {
			t.Fatalf("the dropped prefetch is still listed: %+v", f)
		}
	}
}

// planJob plans at now on c as the manager does (StartPlan, Run,
// FinishPlan), during running between Run and FinishPlan.
func planJob(r *Replicator, c *cluster, now time.Time, during func()) []Action {
	j := r.StartPlan(now)
	j.Run(&c.view)
	during()
	return r.FinishPlan(j)
}

// The operator's failed prefetch whose node stays out of the plan's view
// (down, draining) from its retry time for RetryMax is forgotten by the
// plan: DroppedPrefetches reports it, once, with why. It went unreported.
func TestDroppedPrefetchNotRetriedReported(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 4)
	r.Prefetched("n0", "t01", 1<<30, offPeak)
	r.FillFailed("n0", "t01", offPeak)
	c.node("n0").Alive = false
	now := offPeak
	planJob(r, c, now, func() {})
	if d := r.DroppedPrefetches(); len(d) != 0 {
		t.Fatalf("dropped %+v while in backoff", d)
	}
	now = now.Add(r.Config().RetryBase + r.Config().RetryMax + time.Minute)
	planJob(r, c, now, func() {})
	droppedOnly(t, r, DropNotRetried, 1)
}

// The operator's prefetch in flight on a node that leaves the plan's view
// (down, draining, forgotten) at its last try is given up by the plan:
// DroppedPrefetches reports it (FillFailed was never called). Before,
// nothing did.
func TestDroppedPrefetchNodeLeftReported(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 4)
	now := offPeak
	r.Prefetched("n0", "t01", 1<<30, now)
	r.fills[fillKey{"n0", "t01"}].attempts = MaxHandRetries - 1 // its last try
	c.node("n0").Alive = false
	r.Plan(now, &c.view)
	droppedOnly(t, r, DropNodeLeft, MaxHandRetries)

	// Its last try not started within FillTimeout, the node in view.
	c.node("n0").Alive = true
	r.Prefetched("n0", "t01", 1<<30, now)
	r.fills[fillKey{"n0", "t01"}].attempts = MaxHandRetries - 1
	r.Plan(now.Add(r.Config().FillTimeout+time.Minute), &c.view)
	droppedOnly(t, r, DropLastTryLost, MaxHandRetries)
}

// The operator's prefetch queued (or waiting for its retry) on a node that
// registers again without an origin is dropped by the plan, reported by
// DroppedPrefetches; a prefetch the operator orders again during the plan
// job that dropped it is not reported (it is tracked again).
func TestDroppedPrefetchNoOriginReported(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 4)
	r.Queued("n0", "t01", 1<<30, offPeak)
	if !r.OperatorPrefetch("n0", "t01") {
		t.Fatal("the queued prefetch is not the operator's")
	}
	c.node("n0").NoOrigin = true
	planJob(r, c, offPeak, func() {})
	droppedOnly(t, r, DropNoOrigin, 0)
	if r.OperatorPrefetch("n0", "t01") {
		t.Fatal("the dropped prefetch is still the operator's")
	}

	r.Queued("n0", "t01", 1<<30, offPeak)
	planJob(r, c, offPeak, func() { r.Queued("n0", "t01", 1<<30, offPeak) })
	if d := r.DroppedPrefetches(); len(d) != 0 {
		t.Fatalf("dropped %+v: the operator ordered it again during the plan", d)
	}
}

// Drops of the planner's own prefetches are not reported.
func TestDroppedPrefetchOfThePlannerNotReported(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 4)
	r.FillFailed("n0", "t01", offPeak) // the planner's (not by hand)
	c.node("n0").Alive = false
	r.Plan(offPeak.Add(2*r.Config().RetryMax), &c.view)
	if d := r.DroppedPrefetches(); len(d) != 0 {
		t.Fatalf("dropped %+v", d)
	}
}

// The operator's failed prefetch of a title since gone from the catalog,
// on a node in service, is forgotten by the plan RetryMax past its retry
// time, reported by DroppedPrefetches.
func TestDroppedPrefetchOfATitleGoneReported(t *testing.T) {
	r := newRep(t, ReplicatorConfig{})
	c := newCluster(2, 4)
	r.Prefetched("n0", "t01", 1<<30, offPeak)
	r.FillFailed("n0", "t01", offPeak)
	delete(c.view.Titles, "t01")
	r.Plan(offPeak.Add(r.Config().RetryBase+r.Config().RetryMax+time.Minute), &c.view)
	droppedOnly(t, r, DropNotRetriedOther, 1)
}
