package cdp

import (
	"context"
	"time"
)

// clock is where a transfer takes its time from: the wall clock in
// production, a fake one in tests that count the delays asked for.
type clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, whichever is first, and returns
	// ctx.Err() in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// wallClock is the real clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
