package acm

import (
	"context"
	"errors"
	"fmt"

	"vodcluster/proto/byterange"
)

// errRangeNotSatisfiable is an HTTP GET of a progressive title whose
// Range asks for no byte of it (every range past the title's end): 416
// at the front door, without a session, a reservation or a fill.
var errRangeNotSatisfiable = errors.New("range not satisfiable")

// rangeRefused is errRangeNotSatisfiable with the title's size, bytes
// (the 416's Content-Range: bytes */size).
type rangeRefused struct {
	size      int64
	excessive bool // more than byterange.MaxRanges ranges
}

func (r rangeRefused) Error() string {
	if r.excessive { // as the node says it
		return fmt.Sprintf("range not satisfiable: more than %d byte ranges", byterange.MaxRanges)
	}
	return fmt.Sprintf("range not satisfiable: the title is %d bytes", r.size)
}

func (rangeRefused) Unwrap() error { return errRangeNotSatisfiable }

// checkRange returns rangeRefused when h, the Range of user's GET of
// title's progressive form, asks for no byte of it (byterange.Satisfiable)
// or for more than byterange.MaxRanges ranges (which the node answers 416
// too: admitted, its session held a slot and a reservation until
// pause_timeout for a 416),
// there is no precondition the node answers first (precondition:
// byterange.PreconditionsFirst) and user may watch the title; nil
// otherwise (no Range, or one the node answers: admission goes on), or
// entitled's error, or errSuspended. A player that asks
// past a title's end (a seek beyond it, a probe with a stale size) was
// admitted before, and its node filled the title from the origin to
// answer 416, the session counted against the subscriber's limit until
// it timed out.
func (m *Manager) checkRange(ctx context.Context, user, title, h string, precondition bool) error {
	if h == "" || precondition { // the node may answer the whole title (If-Range, RFC 9110 §13.1.5), or 412 (If-Match)
		return nil
	}
	t, ok := m.titles()[title]
	excessive := byterange.Classify(h) == byterange.Excessive // the node's 416 too
	if !ok || (!excessive && byterange.Satisfiable(h, t.SizeBytes)) {
		return nil
	}
	if _, err := m.entitled(ctx, user, title); err != nil {
		return err
	}
	m.mu.Lock()
	suspended := m.suspendedLocked(user, m.now())
	m.mu.Unlock()
	if suspended {
		return errSuspended
	}
	return rangeRefused{size: t.SizeBytes, excessive: excessive}
}
