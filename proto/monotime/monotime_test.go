package monotime

import (
	"testing"
	"time"
)

// Time's values carry a monotonic clock reading (Round(0) strips it, so a
// value with one differs from its Round(0)): deadlines and comparisons made
// from them are not moved by a step of the wall clock.
func TestTimeIsMonotonic(t *testing.T) {
	n := Now()
	if n < int64(300*24*time.Hour) {
		t.Fatalf("Now() = %v, want 0 to be long ago", time.Duration(n))
	}
	at := Time(n)
	if at == at.Round(0) {
		t.Fatalf("Time(%d) = %v has no monotonic reading", n, at)
	}
	if d := time.Since(at); d < 0 || d > time.Minute {
		t.Fatalf("time.Since(Time(Now())) = %v", d)
	}
	if w := Wall(n); w != w.Round(0) {
		t.Fatalf("Wall(%d) = %v keeps a monotonic reading", n, w)
	}
}

// Of and Time are inverse, and Since counts from Now.
func TestOfTimeRoundTrip(t *testing.T) {
	now := time.Now()
	n := Of(now)
	if got := Time(n); !got.Equal(now) || got.Sub(now) != 0 {
		t.Fatalf("Time(Of(%v)) = %v", now, got)
	}
	if got := Of(now.Add(3 * time.Second)); got-n != int64(3*time.Second) {
		t.Fatalf("Of(now+3s) - Of(now) = %v", time.Duration(got-n))
	}
	later := Of(now.Add(-2 * time.Second))
	if s := Since(later); s < 2*time.Second || s > time.Minute {
		t.Fatalf("Since(2s ago) = %v", s)
	}
	if w := Wall(later); w.After(time.Now().Add(-2*time.Second)) || w.Before(now.Add(-time.Minute)) {
		t.Fatalf("Wall(2s ago) = %v, now %v", w, now)
	}
}
