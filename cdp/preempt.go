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
// its channel to a viewer's read.
var errYielded = errors.New("origin channel given by a prefetch to a viewer's read")

// transferClass is what a Fetch is for, which decides who gives way to
// whom when every channel is busy.
type transferClass int

const (
	// classFill: a fill a viewer waits for (or a caller that does not
	// say): it queues, ending the oldest read (classRead) first.
	classFill transferClass = iota
	// classRead: a node's read far ahead of a fill
	// (FetchRequest.preemptible): it gives way to fills and, with no_wait,
	// ends the oldest prefetch.
	classRead
	// classPrefetch: a fill no viewer waits for yet
	// (FetchRequest.prefetch): it queues without ending a read, and gives
	// way to reads.
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
// the function that gives it back. A Fetch with noWait takes one only if
// one is free now (RESOURCE_EXHAUSTED otherwise), but for a read
// (classRead) while a prefetch holds one and no fill (classFill) queues
// for one (it would end the read on its way): the oldest such prefetch
// ends (its context cancelled with errYielded) and its channel passes to
// the read, past the prefetches queued (takeHandoff). One without
// noWait queues for one, first come first served, and when it finds every
// channel busy, a fill (classFill) ends the oldest read holding one (its
// context cancelled with errPreempted) so that the channel comes to the
// queue: a node's read of a range far ahead of a fill uses only the
// channels no fill needs (the manager's budget counts fills, prefetches
// among them), and a prefetch only those no viewer's read needs. A read or
// a prefetch (preempt, the cancel of its context, not nil) never ends a
// transfer but as above. Errors: RESOURCE_EXHAUSTED as above; the
// context's, as a gRPC status, while queued.
func (s *Server) acquire(ctx context.Context, noWait bool, cls transferClass, preempt context.CancelCauseFunc) (release func(), err error) {
	if s.slots == nil {
		return func() {}, nil
	}
	if err := ctx.Err(); err != nil { // a caller gone during the stat takes no channel
		return nil, status.FromContextError(err).Err()
	}
	s.preemptMu.Lock()
	if s.slots.TryAcquire(1) {
		release = s.register(cls, preempt)
		s.preemptMu.Unlock()
		return release, nil
	}
	switch {
	case noWait && cls == classRead && len(s.yielding) > 0 && s.queued == 0:
		e := s.yielding[0]
		s.yielding = s.yielding[1:]
		e.handoff = make(chan struct{})
		e.cancel(errYielded) // its channel comes at once (Fetch's watchLeft), handed over
		s.stats.yielded()
		s.preemptMu.Unlock()
		return s.takeHandoff(ctx, e, preempt)
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
	err = s.slots.Acquire(ctx, 1)
	s.stats.waiting(-1)
	s.preemptMu.Lock()
	defer s.preemptMu.Unlock()
	if cls == classFill {
		s.queued--
	}
	if err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return s.register(cls, preempt), nil
}

// takeHandoff waits for the channel of e, a prefetch a read ended, to be
// handed to the read (e's release), up to readYieldWait, and registers the
// read on it. Errors: RESOURCE_EXHAUSTED when it does not come in time, or
// when a fill queued meanwhile (it ends only reads on a channel: the
// channel goes to it); the context's, as a gRPC status. A channel that
// comes after the read stopped waiting goes back to the queue.
func (s *Server) takeHandoff(ctx context.Context, e *preemptEntry, preempt context.CancelCauseFunc) (release func(), err error) {
	s.stats.waiting(1)
	tm := time.NewTimer(readYieldWait)
	defer tm.Stop()
	select {
	case <-e.handoff:
	case <-tm.C:
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
	if s.queued > 0 { // a fill queued meanwhile found no read to end (this one had no channel yet): the channel is its
		s.slots.Release(1)
		s.stats.refused()
		return nil, s.busy()
	}
	return s.register(classRead, preempt), nil
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
