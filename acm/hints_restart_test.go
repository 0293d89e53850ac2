package acm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/smm"
)

// TestHintNotAppliedAgainAtARestart: the catalog's hint of a title is
// applied once; the title's rate then decays below it (here the stored
// snapshot's weights are cut to a tenth, as hours without a request
// would). A restarted manager keeps the decayed rate from the snapshot,
// rather than raising it back to the hint; a hint the catalog changed
// meanwhile is applied.
func TestHintNotAppliedAgainAtARestart(t *testing.T) {
	dir := t.TempDir()
	hint := storageTitles[0] // "hot", 5000 requests a day
	if hint.Id != "hot" || hint.PopularityPerDay != 5000 {
		t.Fatalf("storageTitles[0] = %v: want hot with a hint of 5000 a day", hint)
	}
	a := newManagerWith(t, dir, storageTitles, nil)
	if got := a.rateOf("hot"); !within(got, 5000.0/secondsPerDay) {
		t.Fatalf("rate of hot %g/s: want its hint's %g/s", got, 5000.0/secondsPerDay)
	}
	a.m.savePopularity(time.Now().Add(stateWriteWait))
	decayStored(t, a, "hot", 0.1)
	killManager(t, a) // no snapshot at its Close over the decayed one

	b := newManagerWith(t, dir, storageTitles, nil)
	if got := b.rateOf("hot"); !within(got, 500.0/secondsPerDay) {
		t.Fatalf("rate of hot after a restart %g/s: want the decayed %g/s, not the hint's %g/s", got, 500.0/secondsPerDay, 5000.0/secondsPerDay)
	}
	if err := b.m.Close(); err != nil {
		t.Fatal(err)
	}

	raised := make([]*pb.Title, len(storageTitles))
	for i, ti := range storageTitles {
		raised[i] = proto.CloneOf(ti)
	}
	raised[0].PopularityPerDay = 8000
	c := newManagerWith(t, dir, raised, nil)
	if got := c.rateOf("hot"); !within(got, 8000.0/secondsPerDay) {
		t.Fatalf("rate of hot after its hint changed %g/s: want the new hint's %g/s", got, 8000.0/secondsPerDay)
	}
}

// TestHintNotAppliedAgainAtATakeover: as at a restart, a standby taking
// over keeps the rate of the active manager's snapshot (decayed below the
// hint that manager applied) rather than raising it to the hint again.
func TestHintNotAppliedAgainAtATakeover(t *testing.T) {
	open, _ := sharedRedis(t)
	a, b := activeAndStandby(t, open, storageTitles, nil)
	a.m.savePopularity(time.Now().Add(stateWriteWait))
	decayStored(t, a, "hot", 0.1)
	killManager(t, a) // no snapshot at its Close over the decayed one
	waitFor(t, 20*testLeaderTTL, "B to take over", b.m.Leader)
	if got := b.rateOf("hot"); !within(got, 500.0/secondsPerDay) {
		t.Fatalf("rate of hot after the takeover %g/s: want the decayed %g/s, not the hint's %g/s", got, 500.0/secondsPerDay, 5000.0/secondsPerDay)
	}
}

// rateOf is title's request rate in e's Replicator's demand tracker, per
// second.
func (e *env) rateOf(title string) float64 {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.rep.Popularity().Rate(title, e.m.now())
}

// decayStored multiplies title's weights in the popularity snapshot of
// e's store by f.
func decayStored(t *testing.T, e *env, title string, f float64) {
	t.Helper()
	ctx := context.Background()
	b, err := e.m.st.State(ctx, statePopularity)
	if err != nil {
		t.Fatal(err)
	}
	var p savedPopularity
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, es := range [][]smm.PopularityEntry{p.State.Demand, p.State.Rank} {
		for i := range es {
			if es[i].Title == title {
				es[i].Weight *= f
				n++
			}
		}
	}
	if n != 2 {
		t.Fatalf("%s in %d of the snapshot's trackers: want 2", title, n)
	}
	if b, err = json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	if err := e.m.st.PutState(ctx, statePopularity, b); err != nil {
		t.Fatal(err)
	}
}
