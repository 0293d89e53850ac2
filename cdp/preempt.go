package cdp

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errPreempted is the cause a preemptible transfer's context ends with
// when the transfer gives its channel to a Fetch that queues for one.
var errPreempted = errors.New("origin channel given to a transfer that needed one")

// errYielded is the cause a prefetch's context ends with when it gives
// its channel to a viewer's fill or read.
var errYielded = errors.New("origin channel given by a prefetch to a viewer's fill or read")

// transferClass is what a Fetch is for, which decides who gives way to
// whom when every channel is busy.
type transferClass int

const (
	// classFill: a fill a viewer waits for (or a caller that does not
	// say): it takes the channel of the oldest prefetch (classPrefetch),
	// or else queues, ending the oldest read (classRead) first.
	classFill transferClass = iota
	// classRead: a node's read far ahead of a fill
	// (FetchRequest.preemptible): it gives way to fills and, with no_wait,
	// ends the oldest prefetch.
	classRead
	// classPrefetch: a fill no viewer waits for yet
	// (FetchRequest.prefetch): it queues without ending a read, behind
	// every fill queued, and gives way to fills and reads.
	classPrefetch
)

// readYieldWait bounds how long a viewer's read (classRead, no_wait) that
// ended a prefetch waits for that prefetch's channel to be handed over
// (RESOURCE_EXHAUSTED when it does not come in time: a transfer that
// does not return gives its channel back once its caller left, at once).
// Variable for tests.
var readYieldWait = 5 * time.Second

// preemptEntry is a transfer holding a channel that gives it up to
// another (a read, a prefetch): cancel ends it with errPreempted or
// errYielded.
type preemptEntry struct {
	cancel context.CancelCauseFunc
	// handoff, set when a read ended this prefetch, is closed when its
	// channel passes to that read (its release), past the queue; orphan:
	// that read stopped waiting, and the channel goes back to the queue.
	// preemptMu.
	handoff chan struct{}
	orphan  bool
}

// acquire takes a transfer channel for a Fetch of class cls and returns
// the function that gives it back. When every channel is busy:
//
//   - a fill (classFill) ends the oldest prefetch holding one (its context
//     cancelled with errYielded) and takes its channel, handed over past
//     the queue (takeHandoff); with no prefetch on a channel it queues,
//     ending the oldest read holding one (errPreempted) so that the
//     channel comes to the queue;
//   - a read (classRead) with noWait does the same with the oldest
//     prefetch while no fill queues for a channel (it would end the read
//     on its way), and is refused otherwise;
//   - a prefetch (classPrefetch) queues.
//
// While a fill queues, no other transfer takes a channel: one free goes
// to the fill, and a prefetch or a read the queue gives one to gives it to
// the fill and queues again once that fill has left the queue.
//
// Otherwise a Fetch with noWait is refused (RESOURCE_EXHAUSTED) and one
// without it queues, first come first served. So a prefetch uses only the
// channels no viewer's fill or read needs, and a read only those no fill
// needs: the manager's budget of origin channels counts the fills viewers
// wait for, not the prefetches (lsm). A read or a prefetch (preempt, the
// cancel of its context, not nil) never ends a transfer but as above.
// Errors: RESOURCE_EXHAUSTED as above; the context's, as a gRPC status,
// while queued.
func (s *Server) acquire(ctx context.Context, noWait bool, cls transferClass, preempt context.CancelCauseFunc) (release func(), err error) {
	if s.slots == nil {
		return func() {}, nil
	}
	if err := ctx.Err(); err != nil { // a caller gone during the stat takes no channel
		return nil, status.FromContextError(err).Err()
	}
	s.preemptMu.Lock()
	// A channel free while a fill queues (one the fill freed by ending a
	// read, given back before the fill reached the semaphore's queue) is
	// the fill's.
	if (cls == classFill || s.queued == 0) && s.slots.TryAcquire(1) {
		release = s.register(cls, preempt)
		s.preemptMu.Unlock()
		return release, nil
	}
	switch {
	case len(s.yielding) > 0 && (cls == classFill || noWait && cls == classRead && s.queued == 0):
		e := s.yielding[0]
		s.yielding = s.yielding[1:]
		e.handoff = make(chan struct{})
		e.cancel(errYielded) // its channel comes at once (Fetch's watchLeft), handed over
		s.stats.yielded()
		s.preemptMu.Unlock()
		return s.takeHandoff(ctx, e, cls, preempt)
	case noWait:
		s.preemptMu.Unlock()
		s.stats.refused()
		return nil, s.busy()
	case cls == classFill && len(s.preempt) > 0:
		e := s.preempt[0]
		s.preempt = s.preempt[1:]
		e.cancel(errPreempted) // its channel goes back at once (Fetch's watchLeft), to the queue's head
		s.stats.preempted()
	}
	if cls == classFill {
		s.queued++
	}
	s.preemptMu.Unlock()

	s.stats.waiting(1)
	defer s.stats.waiting(-1)
	for {
		err = s.slots.Acquire(ctx, 1)
		s.preemptMu.Lock()
		if err != nil || cls == classFill || s.queued == 0 {
			break
		}
		// A fill queues (behind this prefetch or read, or about to): the
		// channel is the fill's. This transfer queues again once a fill
		// has left the queue, so that it does not take the channel back
		// first.
		s.slots.Release(1)
		left := s.fillLeftLocked()
		s.preemptMu.Unlock()
		select {
		case <-left:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	defer s.preemptMu.Unlock()
	if cls == classFill {
		s.leftQueueLocked()
	}
	if err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return s.register(cls, preempt), nil
}

// leftQueueLocked counts a fill out of the queue (with a channel or
// without) and lets the transfers that gave way to it queue again
// (preemptMu held).
func (s *Server) leftQueueLocked() {
	s.queued--
	if s.fillLeft != nil {
		close(s.fillLeft)
		s.fillLeft = nil
	}
}

// fillLeftLocked returns a channel closed when the next fill leaves the
// queue (with a channel or without: its caller left). preemptMu held.
func (s *Server) fillLeftLocked() <-chan struct{} {
	if s.fillLeft == nil {
		s.fillLeft = make(chan struct{})
	}
	return s.fillLeft
}

// takeHandoff waits for the channel of e, a prefetch a fill or a read
// (cls) ended, to be handed over (e's release), and registers the
// transfer on it; a read waits up to readYieldWait. Errors, for a read:
// RESOURCE_EXHAUSTED when it does not come in time, or when a fill queued
// meanwhile (it ends only reads on a channel: the channel goes to it);
// for both, the context's as a gRPC status. A channel that comes after
// the transfer stopped waiting goes back to the queue.
func (s *Server) takeHandoff(ctx context.Context, e *preemptEntry, cls transferClass, preempt context.CancelCauseFunc) (release func(), err error) {
	s.stats.waiting(1)
	var timeout <-chan time.Time
	if cls == classRead {
		tm := time.NewTimer(readYieldWait)
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-e.handoff:
	case <-timeout:
		err = s.busy()
		s.stats.refused()
	case <-ctx.Done():
		err = status.FromContextError(ctx.Err()).Err()
	}
	s.stats.waiting(-1)
	s.preemptMu.Lock()
	defer s.preemptMu.Unlock()
	if err != nil {
		select {
		case <-e.handoff: // handed over meanwhile: back to the queue
			s.slots.Release(1)
		default:
			e.orphan = true
		}
		return nil, err
	}
	if cls == classRead && s.queued > 0 { // a fill queued meanwhile found no read to end (this one had no channel yet): the channel is its
		s.slots.Release(1)
		s.stats.refused()
		return nil, s.busy()
	}
	return s.register(cls, preempt), nil
}

// busy is the RESOURCE_EXHAUSTED of a no_wait Fetch with no channel.
func (s *Server) busy() error {
	return status.Errorf(codes.ResourceExhausted, "all %d origin transfer channels are busy", s.MaxTransfers)
}

// register records a transfer of class cls that has just taken a channel
// (a read or a prefetch, preempt not nil, in the list of those that give
// way) and returns the function that gives the channel back and forgets
// the transfer (preemptMu held).
func (s *Server) register(cls transferClass, preempt context.CancelCauseFunc) (release func()) {
	if cls == classFill || preempt == nil {
		return func() { s.slots.Release(1) }
	}
	list := &s.preempt
	if cls == classPrefetch {
		list = &s.yielding
	}
	e := &preemptEntry{cancel: preempt}
	*list = append(*list, e)
	return func() {
		s.preemptMu.Lock()
		defer s.preemptMu.Unlock()
		if i := slices.Index(*list, e); i >= 0 {
			*list = slices.Delete(*list, i, i+1)
		}
		if e.handoff != nil && !e.orphan {
			close(e.handoff) // to the read that ended it (takeHandoff)
			return
		}
		s.slots.Release(1)
	}
}
