package boss

import (
	"context"
	"runtime"
	"sync"
)

// bcryptSlots bounds the bcrypt comparisons running at once, over every
// File: all the cores but one, at least one.
var bcryptSlots = newSlots(max(1, runtime.GOMAXPROCS(0)-1))

// slots is a counting semaphore with two waiting lines: a freed slot goes
// to the longest waiting priority caller (WithPriority), else to the
// longest waiting other one. Safe for concurrent use.
type slots struct {
	size      int // slots in all
	mu        sync.Mutex
	free      int
	high, low []chan struct{} // waiting callers, each closed when given a slot
}

func newSlots(n int) *slots { return &slots{size: n, free: n} }

// acquire takes a slot, waiting in the priority line when prio, until
// ctx ends (its error: no slot is held then).
func (s *slots) acquire(ctx context.Context, prio bool) error {
	s.mu.Lock()
	if s.free > 0 && len(s.high) == 0 && (prio || len(s.low) == 0) {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	line := &s.low
	if prio {
		line = &s.high
	}
	*line = append(*line, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for i, c := range *line {
		if c == ch {
			*line = append((*line)[:i], (*line)[i+1:]...)
			s.mu.Unlock()
			return ctx.Err()
		}
	}
	s.mu.Unlock()
	s.release() // given a slot as ctx ended: pass it on
	return ctx.Err()
}

// release gives a slot back: to the first priority caller waiting, else
// the first other one, else to the free ones.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range []*[]chan struct{}{&s.high, &s.low} {
		if len(*line) > 0 {
			close((*line)[0])
			*line = (*line)[1:]
			return
		}
	}
	s.free++
}

type priorityKey struct{}

// WithPriority returns ctx marked so that File.Authenticate's bcrypt
// comparison under it takes the next free slot before those of unmarked
// contexts: the front door marks the logins of a client address and user
// name that logged in correctly before, so that a flood of wrong guesses
// (each a bcrypt comparison, about 50 ms) does not queue ahead of its
// subscribers.
func WithPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, true)
}

// priority reports whether ctx is marked by WithPriority.
func priority(ctx context.Context) bool {
	p, _ := ctx.Value(priorityKey{}).(bool)
	return p
}
