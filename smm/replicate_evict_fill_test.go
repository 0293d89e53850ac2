package smm

import (
	"testing"
	"time"
)

// The operator's eviction of a title whose prefetch is in flight (the
// node cancels it: a prefetch no viewer reads) forgets that prefetch: it
// is no longer listed (Fills) nor the operator's (OperatorPrefetch), and
// its copy is not kept should the node have completed it all the same.
func TestEvictedForgetsPrefetchInFlight(t *testing.T) {
	r := newRep(t, ReplicatorConfig{EvictHold: time.Hour, RetryBase: time.Second, RetryMax: time.Second})
	now := offPeak
	r.Prefetched("n0", "t00", 1<<30, now)
	if fs := r.Fills(); len(fs) != 1 {
		t.Fatalf("fills after the operator's prefetch: %+v, want it", fs)
	}
	r.Evicted("n0", "t00", now)
	if fs := r.Fills(); len(fs) != 0 {
		t.Fatalf("fills after the operator evicted the title filling: %+v, want none", fs)
	}
	if r.OperatorPrefetch("n0", "t00") {
		t.Fatal("the operator's prefetch still tracked after its eviction")
	}
	r.FillDone("n0", "t00", now) // had the node completed it all the same
	if r.Kept("n0", "t00", now) {
		t.Fatal("the cancelled prefetch's copy kept")
	}
}
