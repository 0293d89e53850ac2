package acm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"vodcluster/acm/store"
	"vodcluster/proto/logtest"
	"vodcluster/proto/monotime"
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

// renewalsFail is a shared store whose planner-lock renewals fail (the
// store does not answer them) once armed.
type renewalsFail struct {
	*store.Redis
	armed atomic.Bool
}

func (s *renewalsFail) RenewLock(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if s.armed.Load() {
		return false, errors.New("store stalled")
	}
	return s.Redis.RenewLock(ctx, name, holder, ttl)
}

// TestCloseSaysWhenTheLeaseRanOut: an active manager whose lease ran out
// during its stop (the store did not answer its renewal) does not write
// its state over a possible new leader's, and says so: the operator
// learns that the progress and popularity since the last saves are lost.
// A standby's stop says nothing of it.
func TestCloseSaysWhenTheLeaseRanOut(t *testing.T) {
	open, _ := sharedRedis(t)
	var logA, logB logtest.Buffer
	st := &renewalsFail{Redis: open()}
	a := newManagerWith(t, "", nil, func(m *Manager) {
		onShared(st, nil, time.Minute)(m)
		m.Logger = slog.New(slog.NewTextHandler(&logA, nil))
	})
	b := newManagerWith(t, "", nil, func(m *Manager) {
		onShared(open(), nil, time.Minute)(m)
		m.Logger = slog.New(slog.NewTextHandler(&logB, nil))
	})
	if !a.m.Leader() || b.m.Leader() {
		t.Fatalf("leaders: a %v, b %v; want a alone", a.m.Leader(), b.m.Leader())
	}
	st.armed.Store(true)
	a.m.lead.until.Store(monotime.Of(time.Now().Add(-time.Second))) // the lease ran out
	if err := a.m.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logA.String(), "state not saved, the planner lock's lease ran out") {
		t.Errorf("the stop after the lease ran out says nothing of the state not saved:\n%s", logA.String())
	}
	if err := b.m.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logB.String(), "state not saved") {
		t.Errorf("a standby's stop warns of state not saved:\n%s", logB.String())
	}
}
