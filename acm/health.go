package acm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"vodcluster/acm/store"
)

// DefaultHealthCheck is how often the manager checks that its store
// answers (Manager.HealthCheck), for /healthz.
const DefaultHealthCheck = 5 * time.Second

// stateHealthProbe is the state the health check reads: never written, so
// the store answers ErrNotFound when it works.
const stateHealthProbe = "health-probe"

// stateWriteProbe is the state the health check writes (the time, RFC
// 3339) while the last store write failed (health.writeFailed).
const stateWriteProbe = "health-write-probe"

// health is what /healthz reports, kept by the store operations the
// manager makes anyway (sessions, catalog), by healthLoop's one read
// every HealthCheck and by /healthz itself: a probe finding the store's
// last answer older than healthzFresh checks the store (checkStore).
// Nothing else reads the store for it: the front door's refusals read
// storeDown as it stands.
type health struct {
	// catalogLoaded: a catalog came from the origin once (it may be
	// empty: the origin has no title).
	catalogLoaded atomic.Bool
	// catalogReadMs: when a catalog last came from the origin, unix
	// milliseconds; 0 = not since the manager started.
	catalogReadMs atomic.Int64
	// storeDown: the last store operation failed.
	storeDown atomic.Bool
	// authTold: the Redis's refusal of the manager's credentials was
	// logged, with the settings that give them (noteStore), since the
	// store last answered: once per outage.
	authTold atomic.Bool
	// storeStalled: storeDown for a store call that did not answer
	// within its deadline (a stall, not a quick failure): a front-door
	// request makes no store call until the store answers again
	// (persistFront).
	storeStalled atomic.Bool
	// writeFailed: the last store write failed (noteStoreWrite). Only a
	// write then clears storeDown: a Redis that refuses writes (OOM at
	// maxmemory, READONLY as a replica) still answers reads, and the
	// health check's read took it for back while no one could be
	// admitted.
	writeFailed atomic.Bool
	// skipped: the ids of the stored session entries that did not decode
	// whose skipping was logged (logSkipped), to true.
	skipped sync.Map
	// answered: when the store last answered a call noted (noteStore),
	// monotime.Now; 0: not since the manager started.
	answered atomic.Int64
	// checkMu guards check.
	checkMu sync.Mutex
	// check: the health check of the store in flight (checkStore), nil
	// when none is.
	check *storeCheck
}

// Refusals of a front-door request for its store (persistFront); both
// wrap errUnavailable: a 503 with Retry-After, outcome "unavailable".
var (
	// errStoreTimeout: the store did not answer the request's store work
	// within StoreTimeout; it is taken as unavailable from then on.
	errStoreTimeout = fmt.Errorf("%w: the store did not answer within store_timeout", errUnavailable)
	// errStoreDown: the store is taken as unavailable (it failed or did
	// not answer in time), so the request was refused without asking it.
	errStoreDown = fmt.Errorf("%w: the store is unavailable", errUnavailable)
)

// noteStore records the outcome of a store operation. ErrNotFound and
// ErrUndecodable (an entry the store cannot compare) are answers, so a
// success; a cancellation says nothing about the store. A read that
// succeeds does not clear a write's failure (health.writeFailed).
func (m *Manager) noteStore(err error) {
	switch {
	case err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUndecodable):
		m.noteAnswered()
		m.health.storeStalled.Store(false)
		m.health.authTold.Store(false)
		if m.health.writeFailed.Load() {
			return // it reads, but does not write
		}
		if m.health.storeDown.Swap(false) {
			m.log.Info("store answers again: ready")
		}
	case errors.Is(err, context.Canceled):
	default:
		// Credentials refused (the Redis's password changed while the
		// manager ran) name the settings, once per outage: also when it
		// began otherwise (a Redis restarted with a new password refused
		// connections first).
		advice := StoreAuthAdvice(err)
		told := advice != "" && !m.health.authTold.Swap(true)
		if !m.health.storeDown.Swap(true) {
			msg := "store unavailable: not ready (/healthz 503) until it answers"
			if told {
				msg += ": it refuses the manager's credentials: " + advice
			}
			m.log.Error(msg, "err", err)
			m.kickHealth() // reads it again and again until it does (healthLoop)
		} else if told {
			m.log.Error("store still unavailable: it refuses the manager's credentials: "+advice, "err", err)
		}
	}
}

// noteStoreWrite is noteStore for a write (or a delete): its failure also
// sets health.writeFailed. Its success does not clear it: a call that
// stored nothing new (a delete, which a Redis at maxmemory still takes;
// a catalog unchanged, only read) says nothing of whether the store takes
// writes. The health check's write probe clears it (healthLoop).
func (m *Manager) noteStoreWrite(err error) {
	switch {
	case err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUndecodable):
	case errors.Is(err, context.Canceled):
	default:
		m.health.writeFailed.Store(true)
	}
	m.noteStore(err)
}

// notReady returns why the manager cannot admit anyone, or "" when it can:
// its store failed at the last operation, or it has no catalog (the
// origin was never reached and the store held none). It makes no store
// call: it says what the manager knows (/healthz checks a store not
// heard from within healthzFresh first: serveHealthz).
func (m *Manager) notReady() string {
	if m.health.storeDown.Load() {
		return "store unavailable"
	}
	if m.noCatalog() {
		return "no catalog yet: the origin has not been reached"
	}
	return ""
}

// noCatalog reports whether the manager has no catalog: its origin was
// never reached and its store held none. Every title is unknown then,
// which says nothing about the title asked for.
func (m *Manager) noCatalog() bool {
	return m.OriginAddr != "" && !m.health.catalogLoaded.Load() && len(m.titles()) == 0
}

// downRecheck is how soon the health check reads again a store that
// failed quickly (not by a timeout), at most: a Redis refusing
// connections is read twice a second until it answers.
const downRecheck = 500 * time.Millisecond

// healthLoop reads the store every HealthCheck (a standby writes it), so that a store that
// stopped (or came back) answering shows in /healthz while no session
// changes, and the front door refuses at once while it does not answer.
// Its reads are checkStore's, which /healthz shares (a probe finding the
// store not heard from within healthzFresh starts one: serveHealthz);
// it retries the session writes that failed after each read the store
// answers (retryWrites). Its read is answered within StoreTimeout or fails, as a
// front-door request's store work: a store that answers, however slowly,
// within it is not taken as unavailable (a check that takes longer than
// HealthCheck delays the next one). A store that stalled (a store call,
// or this read, timed out: noteStall) is read again at once, each read
// given StoreTimeout, until it answers: its return ends the refusals
// (and /healthz 503, which moves a keepalived VIP after two failed
// checks, 4 s) when it answers, not up to a HealthCheck later. A store
// that fails quickly (a refused connection) is read every downRecheck.
func (m *Manager) healthLoop() {
	t := time.NewTimer(m.HealthCheck)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		case <-m.healthKick:
			t.Stop()
		}
		c := m.checkStore() // or the one a probe started (/healthz)
		select {
		case <-c.done:
		case <-m.ctx.Done():
			return
		}
		if m.ctx.Err() != nil {
			return
		}
		err, stalled := c.err, c.stalled
		if err == nil || errors.Is(err, store.ErrNotFound) {
			m.retryWrites()
		}
		next := m.HealthCheck
		switch {
		case stalled:
			// This read waited StoreTimeout: the next one starts now,
			// so that the store's answer to it is its return.
			next = 0
		case err != nil && !errors.Is(err, store.ErrNotFound):
			// A quick failure (a refused connection: a Redis stopped or
			// restarting): read again soon, so that /healthz answers 200
			// within moments of its return, not a HealthCheck later
			// (keepalived would move the VIP away meanwhile).
			next = min(next, downRecheck)
		}
		t.Reset(next)
	}
}

// noteStall records that a store call did not answer within its deadline
// (a stall, not a quick failure): the store is taken as stalled
// (health.storeStalled; the caller notes the failure with noteStore), and
// the health check reads it at once, again and again until it answers
// (healthLoop).
func (m *Manager) noteStall() {
	m.health.storeStalled.Store(true)
	m.kickHealth()
}

// kickHealth makes the health check read the store now (healthLoop).
func (m *Manager) kickHealth() {
	select {
	case m.healthKick <- struct{}{}:
	default:
	}
}

// maxWriteRetries bounds the sessions whose store write or delete failed
// and waits to be tried again.
const maxWriteRetries = 100_000

// writeRetry is a session whose write or delete in the store failed.
type writeRetry struct {
	s    store.Session // its state at the failure (ended, when sess is nil)
	sess *session      // its persist lock orders the retry after its writes; nil: s alone
}

// retryLater keeps session sess (s, its state at the failure) to be
// written to the store as it is then, or deleted when it has ended, when
// the store answers again (healthLoop): otherwise a shared store keeps a
// live session's older state (a standby taking over would load it) or an
// ended session's entry until a takeover loads and ends it. A delete is
// then made only if this manager still holds the entry (deleteOwn, for
// every session): meanwhile another manager may have taken the session
// over (the store stalled longer than a lease, the nodes moved to the
// standby), and its entry is that manager's; for the same reason a live
// session is written only while this manager holds the planner lock (or
// runs alone), and only over an entry this manager still holds (putOwn:
// its node may have registered with the other manager of the pair, which
// rewrote the entry, while this one kept the lock). Past maxWriteRetries
// the session is logged and left.
func (m *Manager) retryLater(sess *session, s store.Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pendingWrites == nil {
		m.pendingWrites = map[string]writeRetry{}
	}
	if _, ok := m.pendingWrites[s.ID]; !ok && len(m.pendingWrites) >= maxWriteRetries {
		m.log.Error("store: session's write not retried (too many waiting): the store keeps its older state", "session", s.ID, "waiting", len(m.pendingWrites))
		return
	}
	m.pendingWrites[s.ID] = writeRetry{s: s, sess: sess}
}

// dropPendingWritesLocked logs the session writes still waiting for the
// store's return as the manager closes (mu held): they are not made, and
// the store keeps those sessions' earlier state (a manager that loads them
// ends what is over: no-shows, orphans past restore_grace).
func (m *Manager) dropPendingWritesLocked() {
	if n := len(m.pendingWrites); n > 0 {
		m.log.Warn("store: session writes waiting for the store's return dropped at close: the store keeps their earlier state", "sessions", n)
		m.pendingWrites = nil
	}
}

// retryWrites writes the sessions whose write failed while the store was
// unavailable, as they are now, and deletes those ended, each given
// StoreTimeout. A retry waits for a
// write of its session still running (the session's persist lock), so
// that it comes after it; one whose write still waits for the store at
// StoreTimeout stays for the next check. At the first retry that fails
// it stops, keeping that one and those not tried for the next check that
// reads the store, and notes the failure (noteStore; a timeout is a
// stall: noteStall): a store that stalls again meanwhile holds the health
// check one StoreTimeout, not one per waiting session. A session back in
// the table meanwhile as another entry (loaded afresh from the store: its
// node registered again, a takeover) is left to that entry: the store's
// entry is the live session's now. A session whose entry the store
// cannot decode (store.ErrUndecodable: its manager cannot be told) is
// logged and not tried again: it held every retry after it until an
// operator removed the entry.
func (m *Manager) retryWrites() {
	m.mu.Lock()
	batch := make([]writeRetry, 0, len(m.pendingWrites))
	for _, d := range m.pendingWrites {
		batch = append(batch, d)
	}
	m.pendingWrites = nil
	m.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	deleted, written, spared, waiting, skipped := 0, 0, 0, 0, 0
	for i, d := range batch {
		if m.ctx.Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(m.ctx, m.StoreTimeout)
		if d.sess != nil && !d.sess.lockPersist(ctx) {
			cancel()
			m.retryLater(d.sess, d.s)
			waiting++
			continue
		}
		snap, gone, claimedOver, rewrite := d.s, true, "", false
		m.mu.Lock()
		if d.sess != nil {
			snap, gone, rewrite = d.sess.Session, d.sess.ended, d.sess.rewrite
			if (gone && !d.sess.forget) || (!gone && d.sess.reserved) {
				// Its node reports here (a live session with its
				// reservation, one ended by its node or viewer): its
				// claim stands over the entry it was claimed from. An
				// orphan's node may have gone back to that manager.
				claimedOver = d.sess.claimedOver
			}
		}
		// The session is in the table again as another entry of it
		// (loaded afresh from the store: its node registered again, or a
		// takeover): the store's entry is that one's to write or delete.
		cur := m.sessions[snap.ID]
		replaced := cur != nil && cur != d.sess
		m.mu.Unlock()
		var err error
		others := replaced
		switch {
		case replaced:
		case gone:
			err = m.deleteOwn(ctx, snap, claimedOver)
		case m.lead != nil && !m.Leader() && !(rewrite && m.lead.held.Load()):
			// The active manager's to write, if the session is still its
			// (but a write back of this manager's takeover, which it
			// holds the lock for while it loads the sessions).
			others = true
		case rewrite:
			// Missing from the store at the takeover: written whole.
			if err = m.st.PutSession(ctx, snap); err == nil {
				m.claimMade(d.sess, snap)
			}
		default:
			var ok bool
			ok, err = m.putOwn(ctx, snap, claimedOver)
			others = err == nil && !ok // another manager's now: its entry stays
			if ok {
				m.claimMade(d.sess, snap)
			}
		}
		stalled := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if d.sess != nil {
			d.sess.unlockPersist()
		}
		if errors.Is(err, store.ErrUndecodable) {
			m.log.Error("store: session's entry is not a JSON session: left as is, its write not tried again (remove the entry from the sessions hash)",
				"session", snap.ID, "ended", gone, "err", err)
			skipped++
			continue
		}
		if err == nil || errors.Is(err, store.ErrNotFound) || m.ctx.Err() != nil {
			switch {
			case others:
				spared++
			case gone:
				deleted++
			default:
				written++
			}
			continue
		}
		for _, left := range batch[i:] {
			m.retryLater(left.sess, left.s)
		}
		if stalled {
			m.noteStall()
		}
		m.noteStoreWrite(err)
		m.log.Warn("store: sessions' writes stopped: the store failed again; the rest wait for its return",
			"deleted", deleted, "written", written, "left", len(batch)-deleted-written-spared-skipped, "others", spared, "skipped", skipped, "err", err)
		return
	}
	m.log.Info("store: sessions written and ended sessions deleted after the store's return", "deleted", deleted, "written", written, "left", waiting, "others", spared, "skipped", skipped)
}

// storeMsg returns the store's error err for an operator's message: one
// chain of what failed, without the package names the wrappings stacked
// ("acm: load node settings: store: redis: state node-settings: ..."
// reads "load node settings: redis: state node-settings: ..."), with
// "store: " once in front when the chain does not name the store (redis).
func storeMsg(err error) string {
	var parts []string
	named := false
	for _, p := range strings.Split(err.Error(), ": ") {
		switch {
		case p == "acm" || p == "store":
			continue
		case p == "redis" || strings.HasPrefix(p, "redis "):
			named = true
		}
		parts = append(parts, p)
	}
	msg := strings.Join(parts, ": ")
	if !named {
		msg = "store: " + msg
	}
	return msg
}

// clip returns s for an error message: whole up to 64 bytes, else its
// first 64 bytes and how long it was (a client's malformed id is echoed,
// not a megabyte of it).
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:max], len(s))
}
