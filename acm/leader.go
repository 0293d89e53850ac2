package acm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"vodcluster/acm/store"
	"vodcluster/proto/durtext"
	"vodcluster/proto/monotime"
)

// DefaultLeaderTTL is the default lease of the planner lock (Manager.LeaderTTL).
const DefaultLeaderTTL = 10 * time.Second

// deferSteps is how many tries (a third of a ttl apart) a manager no node
// reports to lets pass before it takes a free planner lock (leader.serves).
const deferSteps = 6

// giveBackSteps is how many renewals in a row (a third of a ttl apart) a
// planner-lock holder no node reports to makes before it gives the lock
// to another manager that serves nodes (leader.idle): one ttl, longer
// than a node's reconnection to the manager it left, and well within the
// default RestoreGrace (30 s with the default 10 s ttl), so that the
// sessions it loaded are left to that manager, not ended here.
const giveBackSteps = 3

// plannerLock is the name of the lock that elects the manager whose
// storage planner runs.
const plannerLock = "planner"

// servingLock is the name of a lease (a lock of the store, with the
// planner lock's ttl) that a manager nodes report to takes or extends at
// each of its steps, and gives up once none does (leader.markServing):
// its holder is one of the managers that serve nodes, and a free one says
// none does. A planner-lock holder no node reports to reads it to tell
// whether to give the planner lock to another manager (leader.step).
const servingLock = "serving"

// leader keeps the planner lock of a store shared by several managers
// (store.Locker): it takes the lock when free and renews it every third
// of its ttl. The lock is a lease: a holder that cannot renew steps down
// 2/3 of a ttl after its last successful renewal was sent, before the
// lease runs out in the store (the last third is the margin for clocks
// and delays), so two managers never both believe they hold it.
type leader struct {
	locker store.Locker
	holder string // this manager's value in the lock: host name, pid and random bits
	ttl    time.Duration
	log    *slog.Logger
	gained func() // called by run when the lock is taken after Start
	// standing, when not nil, is called by run after each step that
	// leaves this manager without the lock (a standby), with the step's
	// error (the store did not answer it): the standby re-reads there
	// what the active manager changes in the store.
	standing func(ctx context.Context, stepErr error)
	// holding, when not nil, is called by run, in a goroutine of its own
	// (one at a time, bounded by a third of a ttl), after each renewal
	// that leaves this manager the holder.
	holding func(ctx context.Context)
	inHold  atomic.Bool // a holding call runs
	// serves reports whether nodes report to this manager. One that has
	// none lets deferSteps tries pass (2 ttl) before each attempt at the
	// lock: after the store stalled longer than a lease, the manager
	// the nodes (and the VIP) are on takes the lock back first, rather
	// than a standby that would plan for a cluster it does not see. nil:
	// never defers.
	serves   func() bool
	deferred int // tries let pass in a row
	// yielding: serves was false at the last step: not holding the lock,
	// this manager leaves it to the manager the nodes report to, letting
	// deferSteps tries pass before each of its own (read by the gRPC
	// handlers; step sets it).
	yielding atomic.Bool
	// idle counts renewals in a row by a holder no node reports to
	// (serves): after giveBackSteps, it gives the lock back at the first
	// renewal that finds another manager serving nodes (servingLock held
	// by another): a manager that won the race for a free lock against
	// the manager the nodes are on (when the store came back from a
	// stall, or a manager started just then) gives it to that one. With
	// no manager serving nodes it keeps it: a lone manager started before
	// its nodes, and a pair whose nodes are all dead, where giving it
	// back would pass the lock to and fro between the two.
	idle int
	// serving: this manager holds the servingLock lease as the store
	// last answered (markServing).
	serving bool
	// toOther: this manager holds the lock, no node reports to it, and
	// another manager serves nodes (the servingLock lease, read at each
	// renewal, and at the start): it gives the lock to that one within
	// giveBackSteps renewals. Meanwhile the sessions it loaded are that
	// manager's: they do not end here for their node not coming back
	// (tick), which would write their records twice.
	toOther atomic.Bool

	held atomic.Bool
	// taking is set while a lock taken in run is being taken over
	// (gained has not yet loaded the previous leader's sessions): the
	// manager does not count itself the leader meanwhile, so that its
	// planner does not plan without those sessions.
	taking atomic.Bool
	// other: the store's last answer about the lock was that another
	// manager holds it (a try refused, or this manager gave it back to
	// the manager the nodes report to); cleared when this
	// manager takes it, kept through the store's errors, which say
	// nothing of who holds it. A manager that does not hold the lock
	// without other is taking it (back): the only one on the store after
	// an outage, or the holder whose lease ran short.
	other atomic.Bool
	// kept: when the lock was last taken (step), this manager had been
	// its last holder: no other manager held it since this one did (it
	// retook it after the store's outage, or a renewal that failed).
	// takeOver keeps then the operator's changes in force here that the
	// store did not take (loadOpState).
	kept atomic.Bool
	// until (monotime.Of) is when the holder stops counting itself the holder
	// unless a renewal succeeds: 2/3 of a ttl after the last successful
	// one was sent.
	until atomic.Int64
}

// holds reports whether the lock is held now: taken or renewed, and its
// lease not running short.
func (l *leader) holds() bool {
	return l.held.Load() && !l.taking.Load() && monotime.Now() < l.until.Load()
}

func newLeader(l store.Locker, ttl time.Duration, log *slog.Logger) *leader {
	host, _ := os.Hostname()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &leader{locker: l, holder: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:])), ttl: ttl, log: log}
}

// step tries to take the lock (not held) or renews it (held). It returns
// whether the lock was just taken, and the store's error, if any (then a
// holder keeps the lock until its lease runs short).
func (l *leader) step(ctx context.Context) (gained bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, max(l.ttl/3, time.Second))
	defer cancel()
	sent := time.Now()
	was := l.held.Load()
	idle := l.serves != nil && !l.serves()
	l.yielding.Store(idle)
	if l.serves != nil {
		// After the lock's own call, whose lease matters more, on what is
		// left of the step's time.
		defer l.markServing(ctx, !idle)
	}
	var ok, kept bool
	if was && idle {
		l.idle = min(l.idle+1, giveBackSteps+1)
		other := l.otherServing(ctx)
		l.toOther.Store(other != "")
		if l.idle > giveBackSteps && other != "" {
			l.idle = 0
			l.log.Warn("planner lock given back: no node reports to this manager; another manager serves nodes", "serving", other)
			l.other.Store(true) // to the manager the nodes report to
			l.toOther.Store(false)
			l.release()
			return false, nil
		}
	} else {
		l.idle = 0
		l.toOther.Store(false)
	}
	if was {
		ok, err = l.locker.RenewLock(ctx, plannerLock, l.holder, l.ttl)
	} else {
		if idle && l.deferred < deferSteps {
			l.deferred++
			return false, nil
		}
		l.deferred = 0
		ok, kept, err = l.locker.TakeLock(ctx, plannerLock, l.holder, l.ttl)
	}
	switch {
	case err != nil && was && l.holds():
		l.log.Warn("planner lock not renewed: still held until its lease runs short", "err", err,
			"until", monotime.Wall(l.until.Load()))
		return false, err
	case err != nil:
		if advice := StoreAuthAdvice(err); was && advice != "" {
			l.log.Error("planner lock lost: the store refuses the manager's credentials ("+advice+"); planning stops", "err", err)
		} else if was {
			l.log.Error("planner lock lost: the store does not answer; planning stops", "err", err)
		}
		l.held.Store(false)
		return false, err
	case !ok:
		if was {
			switch h, err := l.locker.LockHolder(ctx, plannerLock); {
			case err != nil:
				l.log.Error("planner lock lost: its renewal was refused; planning stops", "holder_unknown", err)
			case h == "":
				l.log.Error("planner lock lost: its key is gone from the store (its lease ran out, or the store lost its data); planning stops until it is taken again")
			default:
				l.log.Error("planner lock lost to another manager; planning stops", "holder", h)
			}
		}
		if !was {
			// The key is another's. A renewal refused says only that the
			// key is not this manager's: gone too (expired during an
			// outage) for all it knows; the next try tells.
			l.other.Store(true)
		}
		l.held.Store(false)
		return false, nil
	}
	l.other.Store(false)
	l.until.Store(monotime.Of(sent.Add(l.ttl * 2 / 3)))
	if !was {
		l.kept.Store(kept)
	}
	if !was && l.gained != nil {
		l.taking.Store(true) // run clears it once gained has run
	}
	l.held.Store(true)
	if !was {
		l.log.Info("planner lock taken: this manager plans", "holder", l.holder, "ttl", l.ttl)
	}
	return !was, nil
}

// run renews or takes the lock every ttl/3 until ctx ends, calling gained
// each time the lock is taken.
func (l *leader) run(ctx context.Context) {
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			gained, err := l.step(ctx)
			if gained {
				if ctx.Err() == nil && l.gained != nil {
					l.gained()
				}
				l.taking.Store(false)
			} else if !l.holds() && ctx.Err() == nil && l.standing != nil {
				l.standing(ctx, err)
			} else if err == nil && l.holds() && l.holding != nil && l.inHold.CompareAndSwap(false, true) {
				go func() {
					defer l.inHold.Store(false)
					hctx, cancel := context.WithTimeout(ctx, max(l.ttl/3, time.Second))
					defer cancel()
					l.holding(hctx)
				}()
			}
		}
	}
}

// markServing takes or extends the servingLock lease when nodes report to
// this manager (on), and gives it up when none does and this manager
// holds it. A store error leaves what this manager believes it holds as
// it was: the next step tries again, and a lease not extended runs out.
func (l *leader) markServing(ctx context.Context, on bool) {
	switch {
	case on:
		ok, err := l.locker.TryLock(ctx, servingLock, l.holder, l.ttl)
		if err == nil {
			l.serving = ok // false: another manager serving nodes holds it
		}
	case l.serving:
		if _, err := l.locker.Unlock(ctx, servingLock, l.holder); err == nil {
			l.serving = false
		}
	}
}

// otherServing returns the holder of the servingLock lease when it is
// another manager (one that nodes report to), "" when it is free, this
// manager's, or the store does not answer.
func (l *leader) otherServing(ctx context.Context) string {
	h, err := l.locker.LockHolder(ctx, servingLock)
	if err != nil || h == l.holder {
		return ""
	}
	return h
}

// release gives the lock up (compare-and-delete), so that a standby takes
// it at its next try rather than when the lease runs out.
func (l *leader) release() {
	if !l.held.Swap(false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ok, err := l.locker.Unlock(ctx, plannerLock, l.holder); err != nil || !ok {
		l.log.Warn("planner lock not released: the standby takes it when its lease runs out", "ok", ok, "err", err)
		return
	}
	l.log.Info("planner lock released")
}

// Leader reports whether this manager holds the planner lock: its storage
// planner runs and it saves the popularity snapshot. A manager on a store
// of its own (badger) always does; on a shared store (Redis) only the one
// that took the lock does, the others stand by. A standby that takes the
// lock counts itself the leader only once it has loaded the previous
// leader's sessions (takeOver).
func (m *Manager) Leader() bool { return m.lead == nil || m.lead.holds() }

// standby is whether this manager, one of a pair on a shared store, does
// not hold the planner lock: what its admin lists show is then not the
// cluster's (ListSessionsResponse.standby).
func (m *Manager) standby() bool { return m.lead != nil && !m.lead.holds() }

// standbyHint is what a NOT_FOUND for a node adds on a standby (standby),
// where the nodes are not registered: "" on the active manager.
func (m *Manager) standbyHint() string {
	if !m.standby() {
		return ""
	}
	return "; this manager does not hold the planner lock (the standby of a pair): ask the active manager (the pair's virtual IP)"
}

// retaking says why this manager, not the leader (Leader false) on a
// shared store, is not a standby either, "" when it is one (another
// manager holds the planner lock, as the store last said, or this manager
// leaves it to the manager the nodes report to: yielding): it took the
// lock and loads the previous holder's sessions (takeOver), or it is
// taking the lock (back), which the store last said no other manager
// holds (after the store's outage, or a renewal that failed).
func (m *Manager) retaking() string {
	l := m.lead
	switch {
	case l == nil:
		return ""
	case l.held.Load() && l.taking.Load():
		return "this manager has just taken the planner lock (the active manager's role) and is loading the sessions in the store"
	case !l.other.Load() && !m.yielding():
		return "this manager is taking (back) the planner lock (the active manager's role), which no other manager holds as the store last answered (it answers again after an outage, or a renewal failed)"
	}
	return ""
}

// yielding reports whether this manager, not holding the planner lock,
// leaves it to the manager the nodes report to (none reports here:
// leader.yielding) though the store did not say another holds it. A
// holder whose lease runs short renews it, yielding nothing.
func (m *Manager) yielding() bool {
	l := m.lead
	return l != nil && !l.other.Load() && !l.held.Load() && l.yielding.Load()
}

// startLeader, at Start, takes part in the planner lock when the store is
// shared (a store.Locker): one attempt at once, then a goroutine that
// renews or retries. A manager that does not get the lock is a standby:
// the sessions Start loaded belong to the active manager (were they kept,
// they would end after RestoreGrace and be deleted from the shared store
// under it), so the table is left empty; they are loaded when nodes
// register here (registerHook) or when this manager takes the lock
// (takeOver). Errors: the store fails the first attempt.
func (m *Manager) startLeader() error {
	l, ok := m.st.(store.Locker)
	if !ok {
		return nil
	}
	if m.LeaderTTL <= 0 {
		m.LeaderTTL = DefaultLeaderTTL
	}
	if m.LeaderTTL < 30*time.Millisecond {
		return fmt.Errorf("acm: leader TTL %s: want at least 30ms", durtext.Written(m.LeaderTTL))
	}
	m.lead = newLeader(l, m.LeaderTTL, m.log)
	if _, err := m.lead.step(context.Background()); err != nil {
		return fmt.Errorf("acm: planner lock: %w", err)
	}
	if m.Leader() {
		// Taken at the start, while the nodes may report to another
		// manager (one started as the store came back from an outage).
		ctx, cancel := context.WithTimeout(context.Background(), max(m.LeaderTTL/3, time.Second))
		m.lead.toOther.Store(m.lead.otherServing(ctx) != "")
		cancel()
	} else {
		m.mu.Lock()
		n := len(m.sessions)
		m.sessions = map[string]*session{}
		m.userSessions = map[string]int{}
		m.mu.Unlock()
		m.log.Info("standby: another manager holds the planner lock; its sessions are loaded when nodes register here or the lock is taken",
			"sessions_in_store", n)
	}
	m.lead.gained = m.takeOver
	m.lead.standing = m.refreshSuspensions
	m.lead.holding = m.saveUnsavedOp
	m.lead.serves = func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, n := range m.sched.Nodes {
			if n.Alive {
				return true
			}
		}
		return false
	}
	return nil
}

// holderID returns this manager's planner-lock holder id on a shared
// store (store.Session.Manager), or "" on a store of its own.
func (m *Manager) holderID() string {
	if m.lead == nil {
		return ""
	}
	return m.lead.holder
}

// runLeader is the lock's goroutine (started with the others at Start).
func (m *Manager) runLeader() {
	if m.lead != nil {
		m.lead.run(m.ctx)
	}
}

// releaseLeader gives the planner lock and the servingLock lease up at
// Close (after the lock's goroutine ended).
func (m *Manager) releaseLeader() {
	if m.lead == nil {
		return
	}
	m.lead.release()
	if m.lead.serving {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m.lead.markServing(ctx, false)
	}
}

// putLeaderState writes state name as the active manager's (the
// sessions' progress, the popularity snapshot, the known logins): by
// deadline, and on a shared store within the planner lock's lease
// (leaseBound), so that a write that stalled (the store, or this
// process) is not applied over what the manager that took the lock since
// wrote. Errors: the store's.
func (m *Manager) putLeaderState(name string, b []byte, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), m.leaseBound(deadline))
	defer cancel()
	return m.st.PutState(ctx, name, b)
}

// stateWriteWait bounds a periodic write of the active manager's state
// (saveProgress, savePopularity, saveKnownLogins); Close gives its final
// writes of the three one such wait in all, so a stalled store holds a
// stop up 10 s, not 30.
const stateWriteWait = 10 * time.Second

// leaseBound returns deadline, or, on a shared store, when this manager
// stops counting itself the planner-lock holder if that is earlier: a
// store write fenced by it (PutState) is applied before the lease runs
// out in the store, so before another manager can take the lock.
func (m *Manager) leaseBound(deadline time.Time) time.Time {
	if m.lead == nil {
		return deadline
	}
	if until := monotime.Time(m.lead.until.Load()); until.Before(deadline) {
		return until
	}
	return deadline
}
