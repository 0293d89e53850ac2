package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// heldIDs returns the ids of the titles the store holds.
func heldIDs(s *Store) map[string]bool {
	ids := map[string]bool{}
	for _, st := range s.Titles() {
		ids[st.ID] = true
	}
	return ids
}

// A title a viewer is on its way for (Expect) is not evicted to make room
// for a fill: the fill takes another victim, or is refused (ErrNoSpace)
// when nothing else is evictable. It is evictable again once the viewer
// arrived or was ended by the manager (Unexpect), or once the deadline
// passed.
func TestExpectedTitleNotEvicted(t *testing.T) {
	data := sample(t)
	o := &origin{titles: map[string][]byte{"a": data, "b": data, "c": data, "d": data}}
	clock := newTestClock()
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), DiskBytes: int64(2*len(data) + 188), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fill := func(id string) error {
		t.Helper()
		clock.add(time.Second) // each later than the one before (lru)
		return fillEnded(t, s, id)
	}
	for _, id := range []string{"a", "b"} {
		if err := fill(id); err != nil {
			t.Fatal(err)
		}
	}

	// a is the least recently used, but a viewer is on its way for it.
	if !s.Expect("s1", "a", clock.now().Add(time.Minute)) {
		t.Fatal("Expect with a deadline a minute ahead ignored")
	}
	if n := s.Expecting("a"); n != 1 {
		t.Fatalf("Expecting(a) = %d, want 1", n)
	}
	if err := fill("c"); err != nil {
		t.Fatalf("fill of c with b evictable: %v", err)
	}
	if ids := heldIDs(s); !ids["a"] || ids["b"] || !ids["c"] {
		t.Fatalf("held %v: want the expected a kept, b evicted for c", ids)
	}

	// a and c both expected: no room for d, nothing started or removed.
	if !s.Expect("s2", "c", clock.now().Add(time.Minute)) {
		t.Fatal("Expect of c ignored")
	}
	if tt, err := s.Acquire(context.Background(), "d"); !errors.Is(err, ErrNoSpace) {
		if err == nil {
			s.Release(tt)
		}
		t.Fatalf("fill with only expected titles to evict: %v, want ErrNoSpace", err)
	}
	if ids := heldIDs(s); !ids["a"] || !ids["c"] || s.Fills()["d"] != 0 {
		t.Fatalf("held %v, fills of d %d after the refusal", ids, s.Fills()["d"])
	}

	// s1's viewer arrived (or the manager ended it): a is the victim.
	s.Unexpect("s1", "unknown-session")
	if n := s.Expecting("a"); n != 0 {
		t.Fatalf("Expecting(a) = %d after Unexpect, want 0", n)
	}
	if err := fill("d"); err != nil {
		t.Fatalf("fill of d once a is no longer expected: %v", err)
	}
	if ids := heldIDs(s); ids["a"] || !ids["c"] || !ids["d"] {
		t.Fatalf("held %v: want a evicted for d, the expected c kept", ids)
	}

	// s2's deadline passes: c (older than d) is the victim.
	clock.add(time.Minute)
	if n := s.Expecting("c"); n != 0 {
		t.Fatalf("Expecting(c) = %d past its deadline, want 0", n)
	}
	if err := fill("a"); err != nil {
		t.Fatalf("fill of a once c's deadline passed: %v", err)
	}
	if ids := heldIDs(s); !ids["a"] || ids["c"] || !ids["d"] {
		t.Fatalf("held %v: want c evicted for a once its viewer's deadline passed", ids)
	}
}

// The file system's shortage (its free space, not the quota) evicts no
// title a viewer is on its way for either.
func TestExpectedTitleKeptOnFileSystemShortage(t *testing.T) {
	data := sample(t)
	size := int64(len(data))
	o := &origin{titles: map[string][]byte{"old": data, "new": data}}
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o)}) // no quota
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var free atomic.Int64
	free.Store(10 * size)
	s.fsAvail = func() (int64, bool) { return free.Load(), true }
	if err := fillEnded(t, s, "old"); err != nil {
		t.Fatal(err)
	}
	free.Store(size / 2)
	s.Expect("s1", "old", time.Now().Add(time.Minute))
	if tt, err := s.Acquire(context.Background(), "new"); !errors.Is(err, ErrNoSpace) {
		if err == nil {
			s.Release(tt)
		}
		t.Fatalf("fill with half a title free on the file system and the only title expected: %v, want ErrNoSpace", err)
	}
	if ids := heldIDs(s); !ids["old"] {
		t.Fatalf("held %v: the expected title was evicted", ids)
	}
	s.Unexpect("s1")
	if err := fillEnded(t, s, "new"); err != nil {
		t.Fatalf("fill once old is no longer expected: %v", err)
	}
	if ids := heldIDs(s); ids["old"] || !ids["new"] {
		t.Fatalf("held %v: want old evicted for new", ids)
	}
}

// Expect ignores a deadline not after the store's clock and a missing
// session or title; a second Expect of a session replaces its title and
// deadline.
func TestExpectArguments(t *testing.T) {
	clock := newTestClock()
	s, err := Open(Config{Dir: t.TempDir(), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := clock.now()
	for _, c := range []struct {
		session, title string
		until          time.Time
	}{
		{"s1", "a", now},
		{"s1", "a", now.Add(-time.Second)},
		{"s1", "a", time.UnixMilli(0)},
		{"", "a", now.Add(time.Minute)},
		{"s1", "", now.Add(time.Minute)},
	} {
		if s.Expect(c.session, c.title, c.until) {
			t.Errorf("Expect(%q, %q, %v) at %v kept", c.session, c.title, c.until, now)
		}
	}
	if n := s.Expecting("a"); n != 0 {
		t.Fatalf("Expecting(a) = %d after ignored Expects", n)
	}

	s.Expect("s1", "a", now.Add(time.Minute))
	s.Expect("s2", "a", now.Add(time.Minute))
	s.Expect("s1", "b", now.Add(2*time.Minute)) // the same viewer, its new token
	if a, b := s.Expecting("a"), s.Expecting("b"); a != 1 || b != 1 {
		t.Fatalf("Expecting a %d, b %d: want 1 and 1", a, b)
	}
	clock.add(time.Minute)
	if a, b := s.Expecting("a"), s.Expecting("b"); a != 0 || b != 1 {
		t.Fatalf("a minute on: Expecting a %d, b %d: want 0 (s2 past) and 1 (s1's new deadline)", a, b)
	}
}

// At most MaxExpected viewers are kept: a new one past the cap drops the
// one whose deadline comes first.
func TestExpectCap(t *testing.T) {
	clock := newTestClock()
	s, err := Open(Config{Dir: t.TempDir(), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := clock.now()
	s.Expect("first", "first", now.Add(time.Minute))
	for i := range MaxExpected - 1 {
		s.Expect(fmt.Sprint("s", i), "many", now.Add(2*time.Minute+time.Duration(i)*time.Millisecond))
	}
	if a, b := s.Expecting("first"), s.Expecting("many"); a != 1 || b != MaxExpected-1 {
		t.Fatalf("at the cap: Expecting first %d, many %d", a, b)
	}
	s.Expect("last", "last", now.Add(3*time.Minute))
	if a, b, c := s.Expecting("first"), s.Expecting("many"), s.Expecting("last"); a != 0 || b != MaxExpected-1 || c != 1 {
		t.Fatalf("past the cap: Expecting first %d (deadline first: dropped), many %d, last %d", a, b, c)
	}
	s.mu.Lock()
	n, m := len(s.expect.bySession), len(s.expect.order)
	s.mu.Unlock()
	if n != MaxExpected || m != MaxExpected {
		t.Fatalf("%d sessions, %d in the heap: want %d", n, m, MaxExpected)
	}
	// Ending them all leaves nothing.
	ids := []string{"last"}
	for i := range MaxExpected - 1 {
		ids = append(ids, fmt.Sprint("s", i))
	}
	s.Unexpect(ids...)
	s.mu.Lock()
	n, m, k := len(s.expect.bySession), len(s.expect.order), len(s.expect.byTitle)
	s.mu.Unlock()
	if n != 0 || m != 0 || k != 0 {
		t.Fatalf("after Unexpect of all: %d sessions, %d in the heap, %d titles", n, m, k)
	}
}

// A deadline far ahead of the store's clock (a node whose clock is behind
// the manager's by an hour) keeps the title MaxExpectWait, not the hour.
func TestExpectBoundedByMaxExpectWait(t *testing.T) {
	clock := newTestClock()
	s, err := Open(Config{Dir: t.TempDir(), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Expect("skewed", "a", clock.now().Add(time.Hour+70*time.Second)) {
		t.Fatal("Expect an hour ahead ignored")
	}
	s.Expect("near", "b", clock.now().Add(70*time.Second))
	clock.add(70*time.Second - time.Millisecond)
	if a, b := s.Expecting("a"), s.Expecting("b"); a != 1 || b != 1 {
		t.Fatalf("before either bound: Expecting a %d, b %d, want 1 and 1", a, b)
	}
	clock.add(time.Millisecond)
	if b := s.Expecting("b"); b != 0 {
		t.Fatalf("at its own deadline: Expecting b %d, want 0", b)
	}
	clock.add(MaxExpectWait - 70*time.Second - time.Millisecond)
	if a := s.Expecting("a"); a != 1 {
		t.Fatalf("just before MaxExpectWait: Expecting a %d, want 1", a)
	}
	clock.add(time.Millisecond)
	if a := s.Expecting("a"); a != 0 {
		t.Fatalf("MaxExpectWait after Expect, its deadline still %v ahead: Expecting a %d, want 0",
			time.Hour+70*time.Second-MaxExpectWait, a)
	}
}
