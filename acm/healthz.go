package acm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"vodcluster/proto/monotime"
)

// healthzFresh is how old the store's last answer (health.answered) may
// be for /healthz to answer from what the manager knows; with an older
// one it checks the store first (checkStore). A manager that makes few
// store calls (a standby) otherwise answered 200 for up to a HealthCheck
// into a stall that its pair, whose session writes timed out, already
// answered 503 for: keepalived's check, which asks the other manager's
// /healthz when this one's is 503, moved the VIP to it.
const healthzFresh = time.Second

// healthzWait bounds how long /healthz waits for that check of the store:
// keepalived's check (check_manager.sh) gives each answer 1 s (curl -m 1),
// a Kubernetes readiness probe 1 s by default. A check that takes longer
// answers 503 "store did not answer"; it goes on up to StoreTimeout, and
// its outcome is noted as the health loop's is (a store that answers
// within StoreTimeout, however slowly, is not taken as unavailable).
const healthzWait = 750 * time.Millisecond

// storeCheck is one health check of the store (checkStore): its outcome
// is set when done is closed.
type storeCheck struct {
	done chan struct{}
	// err is the store's answer: nil, or store.ErrNotFound, when it answers.
	err error
	// stalled: the store did not answer within StoreTimeout.
	stalled bool
}

// serveHealthz answers 200 "ok" when the manager is ready, 503 with the
// reason otherwise (the reason says no more than that: the front door is
// public; the log has the details). A manager otherwise ready whose store
// last answered more than healthzFresh ago checks the store first, waiting
// for it at most healthzWait ("store did not answer" past it); probes
// asked at once share one check. A manager not ready answers at once.
func (m *Manager) serveHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	why := m.notReady()
	if why == "" && m.storeAnswerAge() > healthzFresh {
		why = m.readyAfterCheck(r.Context())
	}
	if why != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready:", why)
		return
	}
	fmt.Fprintln(w, "ok")
}

// readyAfterCheck checks the store (checkStore: the check in flight, or a
// new one) and returns notReady once it is done, or "store did not
// answer" when it is not within healthzWait, or ctx ends first.
func (m *Manager) readyAfterCheck(ctx context.Context) string {
	c := m.checkStore()
	t := time.NewTimer(healthzWait)
	defer t.Stop()
	select {
	case <-c.done:
		return m.notReady()
	case <-t.C:
	case <-ctx.Done():
	}
	return "store did not answer"
}

// noteAnswered records that the store answered now (health.answered).
// The monotonic count, not Manager.startedAt, which a takeover moves
// under the manager's lock, which the store's callers do not hold.
func (m *Manager) noteAnswered() {
	m.health.answered.Store(monotime.Now())
}

// storeAnswerAge returns how long ago the store last answered
// (health.answered); math.MaxInt64 when it has not since the manager
// started.
func (m *Manager) storeAnswerAge() time.Duration {
	a := m.health.answered.Load()
	if a == 0 {
		return math.MaxInt64
	}
	return monotime.Since(a)
}

// checkStore returns the health check of the store in flight, or starts
// one: one at a time, shared by the health loop and /healthz. A check
// reads the store (writes it, on a standby or after a write failed: a
// health-write-probe state), given StoreTimeout, and notes its outcome
// before it is done: noteStore, or noteStoreWrite for a write (whose
// success alone clears health.writeFailed); a read that timed out is a
// stall (health.storeStalled). Once the manager closes it starts none:
// the check returned is done, its err the manager's context's.
func (m *Manager) checkStore() *storeCheck {
	h := &m.health
	h.checkMu.Lock()
	defer h.checkMu.Unlock()
	if h.check != nil {
		return h.check
	}
	c := &storeCheck{done: make(chan struct{})}
	if err := m.ctx.Err(); err != nil {
		c.err = err
		close(c.done)
		return c
	}
	h.check = c
	go m.runStoreCheck(c)
	return c
}

// runStoreCheck makes check c (checkStore).
func (m *Manager) runStoreCheck(c *storeCheck) {
	ctx, cancel := context.WithTimeout(m.ctx, m.StoreTimeout)
	// A store that failed a write is checked with a write; so is a
	// standby's, which writes nothing else: its lock tries only read
	// while another manager holds the lock, and it stayed ready while
	// Redis refused every write (maxmemory, READONLY).
	write := m.health.writeFailed.Load() || m.standby()
	var err error
	if write {
		err = m.st.PutState(ctx, stateWriteProbe, []byte(m.now().UTC().Format(time.RFC3339Nano)))
	} else {
		_, err = m.st.State(ctx, stateHealthProbe)
	}
	c.err = err
	c.stalled = err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	if m.ctx.Err() == nil {
		if c.stalled {
			m.health.storeStalled.Store(true)
		}
		if write {
			if err == nil {
				m.health.writeFailed.Store(false) // it takes writes again
			}
			m.noteStoreWrite(err)
		} else {
			m.noteStore(err)
		}
	}
	m.health.checkMu.Lock()
	defer m.health.checkMu.Unlock()
	m.health.check = nil
	close(c.done)
}

// waitStoreCheck waits for the health check of the store in flight, if
// any, once the manager's context is done (its store call ends with it,
// and no other check starts): the store closes after it.
func (m *Manager) waitStoreCheck() {
	m.health.checkMu.Lock()
	c := m.health.check
	m.health.checkMu.Unlock()
	if c != nil {
		<-c.done
	}
}
