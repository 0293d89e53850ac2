package acm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/proto/durtext"
)

// adminStoreWait bounds the store work of an operator's call (Admin): a
// standby's read of the stored suspensions for ListSuspensions, and the
// reads and writes of a suspension, a node's setting, a forget, a pin or
// a policy. Well under vodctl's default --timeout (10 s), so that a
// store that does not answer is reported as such (UNAVAILABLE,
// adminStoreMsg), not as vodctl's own deadline passing.
const adminStoreWait = 5 * time.Second

// adminStoreMsg is storeMsg for the error of an operator's call's store
// work, ctx its bound (adminStoreWait): when that bound passed, or the
// store's client gave up reading at it (a network timeout: go-redis
// reads up to the call's deadline), it says that the store did not
// answer within it, naming the store.
func (m *Manager) adminStoreMsg(ctx context.Context, err error) string {
	if errors.Is(err, errOpBusy) {
		return fmt.Sprintf("another operator's change or reload held the operator's settings throughout %s, waiting for %s: try again", durtext.Written(adminStoreWait), m.storeName())
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Sprintf("%s did not answer within %s: try again", m.storeName(), durtext.Written(adminStoreWait))
	}
	return storeMsg(err)
}

// storeName names the manager's store for an operator's message: "the
// store (Redis)" or "the store (badger)".
func (m *Manager) storeName() string {
	switch m.st.(type) {
	case *store.Redis:
		return "the store (Redis)"
	case *store.Badger:
		return "the store (badger)"
	}
	return "the store"
}

// errOpBusy is the error of a wait for opMu that its bound ended: an
// operator's change or a reload held it (waiting for the store).
var errOpBusy = errors.New("the operator's settings held by another change or reload")

// adminLock takes mu (opMu, pinsMu) for an operator's change within ctx,
// its adminStoreWait bound: behind another change waiting for a stalled
// store it waited for the lock without a bound, then for the store, past
// vodctl's default --timeout. Errors: UNAVAILABLE "what: ..." naming the
// store when the bound passes first (mu not held then).
func (m *Manager) adminLock(ctx context.Context, mu *sync.Mutex, what string) error {
	if err := lockCtx(ctx, mu); err != nil {
		return status.Errorf(codes.Unavailable, "%s: %s", what, m.adminStoreMsg(ctx, fmt.Errorf("%w: %w", errOpBusy, err)))
	}
	return nil
}

// lockCtx locks mu, waiting at most until ctx is done: then it returns
// ctx's error and mu stays with whoever holds it (a goroutine left
// behind takes it when it is free and unlocks it again). A caller that
// waits for the store under its own bound waits no longer behind a
// holder that waits for the store too.
func lockCtx(ctx context.Context, mu *sync.Mutex) error {
	if mu.TryLock() {
		return nil
	}
	got := make(chan struct{})
	go func() {
		mu.Lock()
		close(got)
	}()
	select {
	case <-got:
		return nil
	case <-ctx.Done():
		go func() {
			<-got
			mu.Unlock()
		}()
		return ctx.Err()
	}
}

// adminStorageLock prepares an operator's prefetch or evict (what names
// it in the error, e.g. "prefetch not ordered") within ctx, its
// adminStoreWait bound: it takes opMu, then, with a Replicator (whose
// orders and holds are stored), reads the stored prefetch orders, so
// that a store that does not answer refuses the call before anything
// changes (no order sent to a node, nothing stored), and last takes
// planMu and mu (lockBetweenPlans), each wait within ctx. It returns
// what gives planMu and mu back (opMu stays held: the caller unlocks it).
// Errors: UNAVAILABLE "what: ..." naming the store (adminStoreMsg), no
// lock held then.
func (m *Manager) adminStorageLock(ctx context.Context, what string) (unlock func(), err error) {
	if err := m.adminLock(ctx, &m.opMu, what); err != nil {
		return nil, err
	}
	if m.rep != nil {
		// A malformed value is no stall: the write after says so.
		if _, err := m.readPrefetchOrders(ctx, true); err != nil && !errors.Is(err, errMalformed) {
			m.opMu.Unlock()
			return nil, status.Errorf(codes.Unavailable, "%s: %s", what, m.adminStoreMsg(ctx, err))
		}
	}
	// A plan in progress may wait for the store too (its writes).
	if err := lockCtx(ctx, &m.planMu); err != nil {
		m.opMu.Unlock()
		return nil, status.Errorf(codes.Unavailable, "%s: a storage plan in progress held the planner throughout %s, waiting for %s: try again", what, durtext.Written(adminStoreWait), m.storeName())
	}
	m.mu.Lock()
	return func() {
		m.mu.Unlock()
		m.planMu.Unlock()
	}, nil
}

// adminStoreNote is adminStoreMsg for a note in an answer whose change
// was made (an order sent to a node) but whose write to the store was
// not: without the advice to try again, which would order it twice.
func (m *Manager) adminStoreNote(ctx context.Context, err error) string {
	return strings.TrimSuffix(m.adminStoreMsg(ctx, err), ": try again")
}
