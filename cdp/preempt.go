package cdp

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errPreempted is the cause a preemptible transfer's context ends with
// when the transfer gives its channel to a Fetch that queues for one.
var errPreempted = errors.New("origin channel given to a transfer that needed one")

// preemptEntry is a preemptible transfer (FetchRequest.preemptible)
// holding a channel: cancel ends it with errPreempted.
type preemptEntry struct{ cancel context.CancelCauseFunc }

// acquire takes a transfer channel and returns the function that gives it
// back. A Fetch with noWait takes one only if one is free now
// (RESOURCE_EXHAUSTED otherwise); one without queues for one, first come
// first served, and when it finds every channel busy, the oldest
// preemptible transfer holding one is ended (its context cancelled with
// errPreempted, which gives its channel back) so that the channel comes to
// the queue: a node's read of a range far ahead of a fill uses only the
// channels no fill needs (the manager's budget counts fills only). A
// preemptible Fetch (preempt, the cancel of its context, not nil) never
// ends another. Errors: RESOURCE_EXHAUSTED as above; the context's, as a
// gRPC status, while queued.
func (s *Server) acquire(ctx context.Context, noWait bool, preempt context.CancelCauseFunc) (release func(), err error) {
	if s.slots == nil {
		return func() {}, nil
	}
	if err := ctx.Err(); err != nil { // a caller gone during the stat takes no channel
		return nil, status.FromContextError(err).Err()
	}
	s.preemptMu.Lock()
	if s.slots.TryAcquire(1) {
		release = s.register(preempt)
		s.preemptMu.Unlock()
		return release, nil
	}
	if noWait {
		s.preemptMu.Unlock()
		s.stats.refused()
		return nil, status.Errorf(codes.ResourceExhausted, "all %d origin transfer channels are busy", s.MaxTransfers)
	}
	if preempt == nil && len(s.preempt) > 0 {
		e := s.preempt[0]
		s.preempt = s.preempt[1:]
		e.cancel(errPreempted) // its channel goes back at once (Fetch's watchLeft), to the queue's head
		s.stats.preempted()
	}
	s.preemptMu.Unlock()

	s.stats.waiting(1)
	err = s.slots.Acquire(ctx, 1)
	s.stats.waiting(-1)
	if err != nil {
		return nil, status.FromContextError(err).Err()
	}
	s.preemptMu.Lock()
	defer s.preemptMu.Unlock()
	return s.register(preempt), nil
}

// register records a preemptible transfer (preempt not nil) that has just
// taken a channel and returns the function that gives the channel back
// and forgets the transfer (preemptMu held).
func (s *Server) register(preempt context.CancelCauseFunc) (release func()) {
	if preempt == nil {
		return func() { s.slots.Release(1) }
	}
	e := &preemptEntry{cancel: preempt}
	s.preempt = append(s.preempt, e)
	return func() {
		s.preemptMu.Lock()
		if i := slices.Index(s.preempt, e); i >= 0 {
			s.preempt = slices.Delete(s.preempt, i, i+1)
		}
		s.preemptMu.Unlock()
		s.slots.Release(1)
	}
}
