package acm

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// TestHintChangedOnTheActiveNotAppliedAgainAtATakeover: the operator
// raises a title's hint; the active manager reads it and applies it, the
// standby has not read the catalog since. The title's rate then decays
// below both hints, and the standby takes over: it keeps the decayed
// rate of the snapshot, rather than raising it to the hint its own,
// older catalog names (and to the new one again when it reads the
// catalog).
func TestHintChangedOnTheActiveNotAppliedAgainAtATakeover(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, storageTitles, nil)
	// The origin (each manager's stands for the one they share) raises
	// hot's hint; a copy of the titles, not storageTitles' array, which
	// other tests read.
	raised := slices.Clone(storageTitles)
	for i, ti := range raised {
		if ti.GetId() == "hot" {
			c := proto.CloneOf(ti)
			c.PopularityPerDay = 8000
			raised[i] = c
		}
	}
	for _, o := range []*fakeOrigin{a.origin, b.origin} {
		o.mu.Lock()
		o.titles = raised
		o.mu.Unlock()
	}
	if err := a.m.refreshCatalog(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := a.rateOf("hot"); !within(got, 8000.0/secondsPerDay) {
		t.Fatalf("rate of hot on A %g/s: want its new hint's %g/s", got, 8000.0/secondsPerDay)
	}
	a.m.savePopularity(time.Now().Add(stateWriteWait))
	decayStored(t, a, "hot", 0.1)
	killManager(t, a)
	waitFor(t, 20*testLeaderTTL, "B to take over", b.m.Leader)
	if got := b.rateOf("hot"); !within(got, 800.0/secondsPerDay) {
		t.Fatalf("rate of hot after the takeover %g/s: want the decayed %g/s, not a hint's", got, 800.0/secondsPerDay)
	}
}
