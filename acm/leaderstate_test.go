package acm

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestPopularityOfALostLeaderNotWritten: the active manager's write of its
// popularity snapshot stalls (its process froze after it checked that it
// leads); meanwhile it loses the planner lock, and the standby takes over
// and saves its own. The stalled write, once it goes on, does not
// overwrite the new active manager's snapshot: it is bounded by the
// lease, as the sessions' progress is.
func TestPopularityOfALostLeaderNotWritten(t *testing.T) {
	open, _ := sharedRedis(t)
	st := &stalledProgress{Redis: open(), state: statePopularity,
		entered: make(chan struct{}), gate: make(chan struct{}), written: make(chan error, 1)}
	release := func() { st.open.Do(func() { close(st.gate) }) }
	a := newManagerWith(t, "", unhinted(), func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		m.Store = st
	})
	t.Cleanup(release) // before a's Close
	b := newManagerWith(t, "", unhinted(), onShared(open(), nil, time.Minute))
	st.hold.Store(true)
	go a.m.savePopularity(time.Now().Add(stateWriteWait))
	st.loseWhileWriting(t, b)
	b.m.savePopularity(time.Now().Add(stateWriteWait))
	took := storedPopularityAt(t, b)
	release()
	err := <-st.written
	if at := storedPopularityAt(t, b); !at.Equal(took) {
		t.Fatalf("stored popularity of %v (the stalled write: %v): want B's of %v", at, err, took)
	}
}

// storedPopularityAt is when the popularity snapshot in e's store was
// taken.
func storedPopularityAt(t *testing.T, e *env) time.Time {
	t.Helper()
	b, err := e.m.st.State(context.Background(), statePopularity)
	if err != nil {
		t.Fatal(err)
	}
	var p savedPopularity
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.State.At
}

// A manager that retakes its own planner lock after a store stall longer
// than its lease (no other manager held the lock meanwhile) keeps the
// popularity it learnt: it replaced it with the snapshot it had stored
// itself, up to a save interval older, and a title asked for since was
// forgotten.
func TestPopularityKeptAtTheManagersOwnRetake(t *testing.T) {
	open, srv := sharedRedis(t)
	e := newManagerWith(t, "", unhinted(), func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		m.LeaderTTL = 2 * time.Second // lost in ~1.3 s of a stall
		m.HealthCheck = 100 * time.Millisecond
	})
	e.startNode("n1", nodeOpts{}) // it serves a node: it retakes the lock without deferring
	if !e.m.Leader() || e.m.rep == nil {
		t.Fatal("the manager alone on the store is not the planning leader")
	}
	rate := func(title string) float64 {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.rep.Popularity().Rate(title, e.m.now())
	}
	title := storageTitles[1].GetId()
	ask := func() {
		if res := e.describe("demo", "demo", title); res.StatusCode != 200 && res.StatusCode != 302 {
			t.Fatalf("DESCRIBE %s: %d", title, res.StatusCode)
		}
	}
	ask()
	e.m.savePopularity(time.Now().Add(stateWriteWait)) // the snapshot has one request
	stored := rate(title)
	for range 3 {
		ask()
	}
	learnt := rate(title)
	if !(learnt > 3*stored) {
		t.Fatalf("%s's rate after four requests: %v, after one: %v", title, learnt, stored)
	}
	if !(learnt > 0) {
		t.Fatalf("%s's rate after a request: %v", title, learnt)
	}
	srv.Pause(t)
	waitFor(t, 10*time.Second, "the planner lock lost in the stall", func() bool { return !e.m.lead.held.Load() })
	srv.Resume()
	waitFor(t, 15*time.Second, "the lock retaken and the takeover done", e.m.Leader)
	if got := rate(title); !(got > 3*stored) {
		t.Fatalf("%s's rate after the manager's own retake: %v, want about %v (learnt before the stall, not the stored snapshot's)", title, got, learnt)
	}
}
