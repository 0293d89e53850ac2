package smm

import (
	"slices"
	"testing"
)

// gdsf-classic gives a title filled on demand H = L' + F*C/S with L' the
// inflation value after the evictions that made its room (Cherkasova
// 1998). The owner records the request before it asks Victims, and the
// title was stamped with the L before them: it entered below every title
// that stayed, and was the next one evicted.
func TestGDSFClassicFillTakesTheLAfterItsEvictions(t *testing.T) {
	g := NewGDSFClassic(0)
	for range 5 {
		g.Record("a", 100, at(0))
		g.Record("b", 100, at(0))
	}
	g.Record("c", 100, at(1)) // a fill of c on a full disk: room for one title
	items := []Item{{Title: "a", Bytes: 100}, {Title: "b", Bytes: 100, LastAccess: at(1)}}
	if v, ok := g.Victims(items, 100, at(1)); !ok || !slices.Equal(v, []string{"a"}) {
		t.Fatalf("victims %v %v, want [a]", v, ok)
	}
	if g.Clock() != 5 {
		t.Fatalf("L = %v, want 5, H(a)", g.Clock())
	}
	items = []Item{{Title: "b", Bytes: 100, LastAccess: at(1)}, {Title: "c", Bytes: 100, LastAccess: at(1)}}
	if h := g.Priority(&items[1]); h != 6 {
		t.Fatalf("H(c) = %v, want L+1 = 6", h)
	}
	if v, _ := g.Victims(items, 100, at(2)); !slices.Equal(v, []string{"b"}) {
		t.Fatalf("next victim %v, want [b] (H 5 < H(c) 6)", v)
	}
	// A hit makes no room: a title on the disk keeps the L of its request.
	g.Record("c", 100, at(3))
	if v, _ := g.Victims([]Item{{Title: "c", Bytes: 100}, {Title: "d", Bytes: 100}}, 100, at(3)); !slices.Equal(v, []string{"d"}) {
		t.Fatalf("victims %v, want [d]", v)
	}
	if h := g.Priority(&Item{Title: "c", Bytes: 100}); h != 5+2 {
		t.Fatalf("H(c) after a hit at L=5 = %v, want 7", h)
	}
}
