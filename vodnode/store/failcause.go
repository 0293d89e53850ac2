package store

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errCancelled ends a prefetch no viewer watched that the operator's
// eviction cancelled (EvictOrCancel): its bytes are dropped, not kept as
// a partial, and it is not reported as a failure (TakeFailures), which
// the manager would retry.
var errCancelled = errors.New("cancelled: the prefetch was cancelled by the operator's eviction")

// stopCause is the error of t's fill, whose context was cancelled before
// its end: errCancelled (EvictOrCancel), errPreempted (preemptLocked), else
// errAbandoned (its viewers left before the origin's first byte).
func (s *Store) stopCause(t *Title) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case t.evicted:
		return errCancelled
	case t.preempted:
		return errPreempted
	}
	return errAbandoned
}

// dropEvictedCopy removes t, whose fill has just completed, when the
// operator's eviction cancelled it too late (EvictOrCancel came as the
// last bytes did) and no reader holds it since: the operator wanted it
// gone, and Titles no longer listed it.
func (s *Store) dropEvictedCopy(t *Title) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.evicted && t.refs == 0 && s.titles[t.meta.ID] == t {
		s.log.Info("evicting the copy the operator's eviction cancelled as its fill completed", "title", t.meta.ID)
		s.removeLocked(t)
	}
}

// FailCause classes a fill's error for metrics: "abandoned" (its viewers
// left before the origin's first byte), "preempted" (a prefetch no viewer
// watched, stopped for a fill on demand), "cancelled" (a prefetch no viewer
// watched, cancelled by the operator's eviction: EvictOrCancel; the
// storage manager's evictions never stop a fill), "replaced" (the title has another
// size or version at the origin now), "mismatch" (the bytes did not hash
// to the origin's version), "disk" (the node's disk could not take them:
// write errors, no room), "not_found" (the origin no longer has the
// title), else "origin" (the origin failed or stayed away longer than the
// retries allow).
func FailCause(err error) string {
	switch {
	case errors.Is(err, errAbandoned):
		return "abandoned"
	case errors.Is(err, errPreempted):
		return "preempted"
	case errors.Is(err, errCancelled):
		return "cancelled"
	case errors.Is(err, errReplaced):
		return "replaced"
	case errors.Is(err, errMismatch):
		return "mismatch"
	case errors.Is(err, ErrDisk), errors.Is(err, ErrNoSpace):
		return "disk"
	case status.Code(err) == codes.NotFound:
		return "not_found"
	}
	return "origin"
}
