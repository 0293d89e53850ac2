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
