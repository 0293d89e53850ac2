package store

import (
	"context"
	"fmt"
	"time"

	"vodcluster/proto/durtext"
)

// Acquire returns title id held for reading (Release it when done),
// starting its fill from the origin when it is not on disk. Before a fill it
// evicts, with the configured Evictor, titles neither held nor filling when
// the quota would be exceeded. A fill of the title stopped but not ended
// yet (preempted for a fill on demand, abandoned by its viewers) is not
// joined: Acquire waits for its end (at most 10 s) and takes the title
// as it is then. Errors wrap ErrBadID, ErrUnknownTitle, ErrOrigin or
// ErrNoSpace (also: a stopped fill that does not end), or are ctx's
// error, ended while it waits.
func (s *Store) Acquire(ctx context.Context, id string) (*Title, error) {
	return s.get(ctx, id, false)
}

// Prefetch starts filling title id with no reader (a fill ordered ahead of
// demand). A title already stored or filling is left alone. Errors as for
// Acquire; ctx done before the fill is registered (while the origin is
// asked for the title) starts none and returns an error wrapping
// ctx.Err().
func (s *Store) Prefetch(ctx context.Context, id string) error {
	_, err := s.get(ctx, id, true)
	return err
}

func (s *Store) get(ctx context.Context, id string, prefetch bool) (*Title, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: %q", ErrBadID, id)
	}
	for waits := 0; ; waits++ {
		t, ending, err := s.getOnce(ctx, id, prefetch)
		if ending == nil {
			return t, err
		}
		// A fill of the title stopped (preempted for a fill on demand,
		// abandoned by its viewers) and not ended yet: joined, it would
		// fail under its new reader. Its end leaves the title as it is
		// then (a partial to resume, nothing, or, had it completed, the
		// title whole).
		if waits == maxEndingWaits {
			return nil, fmt.Errorf("%w: %q: its fills kept being stopped", ErrNoSpace, id)
		}
		timer := time.NewTimer(preemptWait)
		select {
		case <-ending:
			timer.Stop()
		case <-timer.C:
			return nil, fmt.Errorf("%w: %q: its stopped fill did not end within %s", ErrNoSpace, id, durtext.Written(preemptWait))
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("store: %q: waiting for its stopped fill to end: %w", id, ctx.Err())
		}
	}
}

// maxEndingWaits bounds how many stopped fills of one title get waits
// for the end of before it gives up (each one a fill of the title started
// and stopped again between two looks).
const maxEndingWaits = 3

// getOnce is one try of get: the title held (hold), else its fill
// started. ending is non-nil, and nothing is held or started, when the
// title's fill has been stopped and has not ended yet: it is closed when
// that fill has ended.
func (s *Store) getOnce(ctx context.Context, id string, prefetch bool) (*Title, <-chan struct{}, error) {
	if t, ending := s.hold(id, prefetch); t != nil || ending != nil {
		return t, ending, nil
	}
	// A fill asks the origin for the title as it is now (a title replaced
	// at the origin shows its new version, and a partial of the old one
	// goes); with an origin that predates that question, it reads a
	// catalog older than catalogMaxAge again, or, to resume a partial,
	// any but the last second's.
	s.mu.Lock()
	_, resume := s.partials[id]
	s.mu.Unlock()
	maxAge := catalogMaxAge
	if resume {
		maxAge = catalogMinRefresh
	}
	meta, err := s.cat.fresh(ctx, id, s.cfg.Now(), maxAge)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errClosedStore
	}
	if t, ok := s.titles[id]; ok {
		t, ending := s.holdLocked(t, prefetch)
		return t, ending, nil
	}
	if err := ctx.Err(); prefetch && err != nil {
		// A prefetch stopped while the origin was asked (the operator's
		// eviction of it, the manager's link gone): no fill is started,
		// which the catalog's cached entry would have let it.
		return nil, nil, fmt.Errorf("store: prefetch of %q stopped before its fill started: %w", id, err)
	}
	t, err := s.startFillLocked(meta, prefetch)
	if err != nil {
		return nil, nil, err
	}
	if !prefetch {
		t.refs++
	}
	return t, nil, nil
}

// hold returns the stored or filling title id with one more reference
// (none for a prefetch), or nil when it is not on the node; see
// holdLocked for ending.
func (s *Store) hold(id string, prefetch bool) (*Title, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.titles[id]
	if !ok {
		return nil, nil
	}
	return s.holdLocked(t, prefetch)
}

// holdLocked returns t, a title in s.titles, with one more reference
// (none for a prefetch; s.mu held). When t's fill has been stopped
// (preempted, abandoned: Title.stopped) and has not ended yet, it takes
// nothing and returns nil and the channel the fill's end closes.
func (s *Store) holdLocked(t *Title, prefetch bool) (*Title, <-chan struct{}) {
	if t.filling && t.stopped {
		return nil, t.done
	}
	if !prefetch {
		t.refs++
		t.lastAccess = s.cfg.Now()
		s.watchedLocked(t)
	} else if t.filling {
		t.prefetch = true // wanted now whoever watches: never abandoned
	}
	return t, nil
}
