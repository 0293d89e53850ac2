package boss

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// takeAllSlots takes every bcrypt slot; releaseAllSlots gives them back.
func takeAllSlots() {
	for range bcryptSlots.size {
		_ = bcryptSlots.acquire(context.Background(), false)
	}
}

func releaseAllSlots() {
	for range bcryptSlots.size {
		bcryptSlots.release()
	}
}

// waitLines waits until s has high and low callers waiting.
func waitLines(t *testing.T, s *slots, high, low int) {
	t.Helper()
	for range 1_000_000 {
		s.mu.Lock()
		h, l := len(s.high), len(s.low)
		s.mu.Unlock()
		if h == high && l == low {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("never %d priority and %d other callers waiting", high, low)
}

// A freed slot goes to a priority caller before others that waited
// longer (a subscriber known at its address before a flood of guesses),
// in order within each line; a caller whose context ends leaves its line
// without a slot, and a slot given as its context ended is passed on.
func TestSlotsPriority(t *testing.T) {
	s := newSlots(1)
	if err := s.acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 3)
	wait := func(name string, prio bool) {
		if err := s.acquire(context.Background(), prio); err != nil {
			got <- "error"
			return
		}
		got <- name
	}
	go wait("guess 1", false)
	waitLines(t, s, 0, 1)
	go wait("guess 2", false)
	waitLines(t, s, 0, 2)
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() { left <- s.acquire(ctx, true) }()
	waitLines(t, s, 1, 2)
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller whose context ended: %v", err)
	}
	waitLines(t, s, 0, 2)
	go wait("subscriber", true)
	waitLines(t, s, 1, 2)
	for _, want := range []string{"subscriber", "guess 1", "guess 2"} {
		s.release()
		if g := <-got; g != want {
			t.Fatalf("slot given to %s, want %s", g, want)
		}
	}
	s.release()
	if s.free != 1 {
		t.Fatalf("%d free after every release, want 1", s.free)
	}
}
