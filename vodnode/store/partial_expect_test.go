package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// twoPartials opens a store with room for one title and one and a half
// partials, whose origin (titles p1, p2, new and next) cuts every
// transfer after cut bytes, and leaves partials of p1 then p2, a minute
// apart on the test clock, cut short while the origin was down (it is up
// again). The store is closed when the test ends.
func twoPartials(t *testing.T, cut int64) (*Store, *flakyOrigin, *testClock) {
	t.Helper()
	data := sample(t)
	o := newFlakyOrigin(map[string][]byte{"p1": data, "p2": data, "new": data, "next": data}, cut)
	clk := newTestClock()
	s, err := Open(quickRetry(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), Now: clk.now, DiskBytes: int64(len(data)) + cut + cut/2}, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	o.down.Store(true)
	for _, id := range []string{"p1", "p2"} {
		if fillEnded(t, s, id) == nil {
			t.Fatalf("fill of %s from a down origin completed", id)
		}
		clk.add(time.Minute)
	}
	o.down.Store(false)
	if ps := s.Partials(); len(ps) != 2 {
		t.Fatalf("partials %+v, want p1 and p2", ps)
	}
	return s, o, clk
}

// The partial of a title a viewer is on its way for (Expect) is not
// removed to make room for another fill: the other partials go first,
// then whole titles; a fill that only that partial could make room for
// is refused (ErrNoSpace) and removes nothing. The viewer's fill then
// resumes it (asks the origin for the bytes from the partial's end),
// where it started from the first byte. Room reports the kept partial
// as not freeable (the node's load report counts it used, not free).
func TestExpectedTitlesPartialKept(t *testing.T) {
	const cut = 188 * 2000
	s, o, clk := twoPartials(t, cut)

	// p1's is the oldest partial, but a viewer is on its way for p1:
	// p2's goes for the new title.
	if !s.Expect("s1", "p1", clk.now().Add(time.Minute)) {
		t.Fatal("Expect of p1 ignored")
	}
	// Kept, p1's partial is not reported free (Room), while Usage still
	// counts it among the partials.
	var p1Bytes int64
	for _, p := range s.Partials() {
		if p.ID == "p1" {
			p1Bytes = p.Stored
		}
	}
	usedU, partial, _ := s.Usage()
	usedR, freeable, _ := s.Room()
	if p1Bytes <= 0 || usedR != usedU || freeable != partial-p1Bytes {
		t.Fatalf("Room: %d used, %d freeable; Usage: %d used, %d in partials, p1's %d: want p1's left out of the freeable", usedR, freeable, usedU, partial, p1Bytes)
	}
	if err := fillEnded(t, s, "new"); err != nil {
		t.Fatal(err)
	}
	if ps := s.Partials(); len(ps) != 1 || ps[0].ID != "p1" {
		t.Fatalf("partials after a fill that needed room for one: %+v, want p1's kept", ps)
	}

	// Only p1's partial and the expected new title could make room for
	// next: it is refused, and nothing is removed.
	if !s.Expect("s2", "new", clk.now().Add(time.Minute)) {
		t.Fatal("Expect of new ignored")
	}
	if tt, err := s.Acquire(context.Background(), "next"); !errors.Is(err, ErrNoSpace) {
		if err == nil {
			s.Release(tt)
		}
		t.Fatalf("fill with only an expected title and an expected title's partial to remove: %v, want ErrNoSpace", err)
	}
	if ps := s.Partials(); len(ps) != 1 || ps[0].ID != "p1" || !heldIDs(s)["new"] {
		t.Fatalf("partials %+v, titles %v after the refusal: want p1's partial and new kept", ps, heldIDs(s))
	}

	// new's viewer came and went; p1's arrives: its fill resumes the
	// partial (new makes room).
	s.Unexpect("s2")
	o.omu.Lock()
	fetches := len(o.offsets)
	o.omu.Unlock()
	if err := fillEnded(t, s, "p1"); err != nil {
		t.Fatal(err)
	}
	o.omu.Lock()
	offs := append([]int64(nil), o.offsets[fetches:]...)
	o.omu.Unlock()
	if len(offs) == 0 || offs[0] == 0 {
		t.Errorf("the fill of p1 fetched from offsets %v, want it resumed from its partial (%d bytes)", offs, cut)
	}
	if ps := s.Partials(); len(ps) != 0 {
		t.Errorf("partials %+v after p1's fill, want none", ps)
	}
}
