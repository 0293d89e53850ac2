package smm

import (
	"slices"
	"testing"
	"time"
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

// CanFree answers whether room can be made without the side effects of
// Victims: gdsf-classic raises L and forgets its victims, w-tinylfu
// forgets them at its next call. A queued operator's prefetch asked
// Victims only to check for room, and reset the disk's history.
func TestCanFreeChangesNoState(t *testing.T) {
	// hot is the least recently used: a policy that lost its history
	// evicts it first.
	items := []Item{{Title: "cold", Bytes: 100, LastAccess: at(2)}, {Title: "hot", Bytes: 100, LastAccess: at(1)},
		{Title: "play", Bytes: 100, InUse: true}}
	for _, name := range []string{"gdsf-classic", "w-tinylfu", "gdsf", "lru", "lfu"} {
		st, err := NewStorage(name, StorageConfig{Planner: PlannerNone})
		if err != nil {
			t.Fatal(err)
		}
		ev := st.Evictor("n")
		rec := ev.(Recorder)
		for _, x := range []string{"cold", "hot", "play"} {
			rec.Record(x, 100, at(0))
		}
		for range 9 {
			rec.Record("hot", 100, at(1))
		}
		for range 3 {
			if !CanFree(ev, items, 200, at(2)) || CanFree(ev, items, 201, at(2)) {
				t.Fatalf("%s: CanFree of 200 and 201 bytes with 200 evictable", name)
			}
		}
		if name == "lru" || name == "lfu" {
			continue // no history: the least recently used goes
		}
		rec.Record("play", 100, at(3))
		if v, ok := ev.Victims(items, 100, at(4)); !ok || !slices.Equal(v, []string{"cold"}) {
			t.Fatalf("%s: victims after three room checks %v %v, want [cold]", name, v, ok)
		}
	}
	// The node's pins count as in use.
	pins := &Pins{}
	if _, err := pins.Pin("n", "cold"); err != nil {
		t.Fatal(err)
	}
	st, _ := NewStorage("w-tinylfu", StorageConfig{Pins: pins})
	if CanFree(st.Evictor("n"), items, 101, at(0)) || !CanFree(st.Evictor("n"), items, 100, at(0)) {
		t.Fatal("CanFree counts a pinned title as room")
	}
}

// A title w-tinylfu refuses to admit is streamed through, not kept: it
// leaves the segments (the sketch keeps its count). It stayed in
// probation with its candidacy spent, and its next request promoted it
// to protected without passing the filter again.
func TestWTinyLFURefusedTitleLeavesTheSegments(t *testing.T) {
	w := NewWTinyLFU()
	w.Record("x", 100, at(0))
	w.Record("x", 100, at(0))
	disk := []Item{{Title: "x", Bytes: 100}}
	for i := range 2 {
		w.Record("b", 100, at(1+i))
		v, ok := w.Victims(disk, 100, at(1+i))
		if !ok || !slices.Equal(v, []string{"x"}) {
			t.Fatalf("request %d of b: victims %v %v, want [x]", i+1, v, ok)
		}
		if w.Admit("b", 100, disk, at(1+i)) {
			t.Fatalf("request %d of b (estimate %d) admitted over x (estimate %d)", i+1, w.Frequency("b"), w.Frequency("x"))
		}
		if e := w.ents["b"]; e != nil {
			t.Fatalf("request %d of b: refused, still in segment %d", i+1, e.seg)
		}
	}
	if w.Frequency("b") != 2 {
		t.Fatalf("sketch estimate of b %d, want 2", w.Frequency("b"))
	}
	// Its third request beats x's two.
	w.Record("b", 100, at(3))
	if _, ok := w.Victims(disk, 100, at(3)); !ok || !w.Admit("b", 100, disk, at(3)) {
		t.Fatal("b, requested three times, not admitted over x, requested twice")
	}
	if e := w.ents["b"]; e == nil || e.seg == segProtected {
		t.Fatalf("b admitted: %+v, want it in the window or probation", e)
	}
}

// Without Record calls (a node's own evictor) w-tinylfu is LRU by
// Item.LastAccess, as its doc says; it evicted the title it had just
// heard of (appended at probation's end) first.
func TestWTinyLFUWithoutRecordIsLRU(t *testing.T) {
	w := NewWTinyLFU()
	t1 := at(0)
	items := []Item{{Title: "old", Bytes: 100, LastAccess: t1}, {Title: "mid", Bytes: 100, LastAccess: t1.Add(time.Hour)}}
	w.Victims(items, 0, t1.Add(2*time.Hour))
	items = append(items, Item{Title: "new", Bytes: 100, LastAccess: t1.Add(3 * time.Hour)})
	if v, _ := w.Victims(items, 200, t1.Add(3*time.Hour)); !slices.Equal(v, []string{"old", "mid"}) {
		t.Fatalf("victims %v, want [old mid]", v)
	}
	// old played again: now the most recent.
	items[0].LastAccess = t1.Add(4 * time.Hour)
	if v, _ := w.Victims(items, 100, t1.Add(4*time.Hour)); !slices.Equal(v, []string{"mid"}) {
		t.Fatalf("victims %v, want [mid]", v)
	}

	// With Record calls, titles it never heard of (prefetches) join the
	// least recent end of probation, the least recently used last.
	w = NewWTinyLFU()
	w.Record("a", 100, t1)
	items = []Item{{Title: "a", Bytes: 100, LastAccess: t1},
		{Title: "p1", Bytes: 100, LastAccess: t1.Add(time.Hour)}, {Title: "p2", Bytes: 100, LastAccess: t1.Add(2 * time.Hour)}}
	if v, _ := w.Victims(items, 200, t1.Add(3*time.Hour)); !slices.Equal(v, []string{"p1", "p2"}) {
		t.Fatalf("victims %v, want [p1 p2]", v)
	}
}
