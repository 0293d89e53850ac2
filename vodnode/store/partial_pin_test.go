package store

import "testing"

// The partial of a title pinned to the node (SetProtected) is not removed
// to make room for another fill, as that of a title a viewer is on its
// way for is not (TestExpectedTitlesPartialKept): the other partials go
// first, and Room reports it used, not freeable. The pin's prefetch would
// otherwise fetch the title again from its first byte.
func TestPinnedTitlesPartialKept(t *testing.T) {
	const cut = 188 * 2000
	s, _, _ := twoPartials(t, cut)
	// p1's is the oldest partial, but p1 is pinned: p2's goes for new.
	s.SetProtected([]string{"p1"})
	_, partial, _ := s.Usage()
	if _, freeable, _ := s.Room(); freeable != partial-cut {
		t.Fatalf("Room: %d freeable of %d in partials, want the pinned p1's %d left out", freeable, partial, cut)
	}
	if err := fillEnded(t, s, "new"); err != nil {
		t.Fatal(err)
	}
	if ps := s.Partials(); len(ps) != 1 || ps[0].ID != "p1" {
		t.Fatalf("partials after a fill that needed room for one: %+v, want the pinned p1's kept", ps)
	}
}
