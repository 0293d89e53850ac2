package acm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"vodcluster/acm/store"
	pb "vodcluster/proto/vodcluster/v1"
)

// deadlineRecorder is a store of its own that refuses the active
// manager's state writes and records each one's deadline, by state.
type deadlineRecorder struct {
	store.Store
	mu        sync.Mutex
	deadlines map[string]time.Time
}

func (s *deadlineRecorder) PutState(ctx context.Context, name string, b []byte) error {
	switch name {
	case stateProgress, statePopularity, stateKnownLogins:
		dl, _ := ctx.Deadline()
		s.mu.Lock()
		s.deadlines[name] = dl
		s.mu.Unlock()
		return errors.New("store stalled")
	}
	return s.Store.PutState(ctx, name, b)
}

// TestCloseWritesWithinOneWait: the active manager's last writes at Close
// (the sessions' progress, the popularity snapshot, the known logins)
// share one deadline, stateWriteWait from their start: a store that
// stalls holds the stop up for one wait, not one a write.
func TestCloseWritesWithinOneWait(t *testing.T) {
	b, err := store.OpenBadger(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	st := &deadlineRecorder{Store: b, deadlines: map[string]time.Time{}}
	e := newManager(t, "", func(m *Manager) {
		m.Store = st
		m.ProgressSave = time.Hour // the writes at Close alone
	})
	n := e.startNode("n1", nodeOpts{})
	if err := n.event(e.admitOne("t1"), pb.SessionEvent_KIND_STARTED); err != nil { // progress to save
		t.Fatal(err)
	}
	e.m.logins.markKnownDirty() // known pairs to save
	before := time.Now()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.deadlines) != 3 {
		t.Fatalf("writes at Close %v: want the progress, the popularity and the known logins", st.deadlines)
	}
	first := st.deadlines[stateProgress]
	if first.Before(before.Add(stateWriteWait)) {
		t.Fatalf("deadline %v: want stateWriteWait after Close began (%v)", first, before)
	}
	for name, dl := range st.deadlines {
		if !dl.Equal(first) {
			t.Errorf("%s written by %v, the progress by %v: want one deadline for the three", name, dl, first)
		}
	}
}
