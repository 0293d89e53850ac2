package smm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestEvictorsRegistered(t *testing.T) {
	want := []string{"gdsf", "gdsf-classic", "lfu", "lru", "w-tinylfu"}
	if got := Evictors(); !slices.Equal(got, want) {
		t.Fatalf("Evictors() = %v, want %v", got, want)
	}
	for _, n := range want {
		ev, err := NewEvictor(n)
		if err != nil || ev.Name() != n {
			t.Fatalf("NewEvictor(%q) = %v, %v", n, ev, err)
		}
	}
	ev, err := NewEvictor("")
	if err != nil || ev.Name() != DefaultEvictor {
		t.Fatalf("default evictor %v %v", ev, err)
	}
	if _, err := NewEvictor("belady"); err == nil {
		t.Fatal("unknown name accepted")
	}
}

func TestLFUOrder(t *testing.T) {
	items := []Item{
		{Title: "hot", Bytes: 10, Hits: 9, LastAccess: at(1)},
		{Title: "cold-old", Bytes: 10, Hits: 1, LastAccess: at(2)},
		{Title: "cold-new", Bytes: 10, Hits: 1, LastAccess: at(5)},
		{Title: "warm", Bytes: 10, Hits: 3, LastAccess: at(0)},
	}
	v, ok := LFU{}.Victims(items, 25, at(9))
	if !ok || !slices.Equal(v, []string{"cold-old", "cold-new", "warm"}) {
		t.Fatalf("victims %v ok=%v", v, ok)
	}
}

// TestGDSFClassicOrder checks H = L + F*C/S by hand: with SetupBytes 0 every
// title's F*C/S is F, so the least requested goes first; with a setup cost
// of 100 bytes a small title earns more per request than a large one.
func TestGDSFClassicOrder(t *testing.T) {
	g := NewGDSFClassic(0)
	for i, n := range map[string]int{"a": 3, "b": 1, "c": 2} {
		for range n {
			g.Record(i, 100, at(0))
		}
	}
	items := []Item{{Title: "a", Bytes: 100}, {Title: "b", Bytes: 100}, {Title: "c", Bytes: 100}}
	v, ok := g.Victims(items, 150, at(1))
	if !ok || !slices.Equal(v, []string{"b", "c"}) {
		t.Fatalf("victims %v", v)
	}
	if g.Clock() != 2 { // L rises to H(c) = 0 + 2
		t.Fatalf("L = %v, want 2", g.Clock())
	}
	// A title requested once after the inflation outranks "a", requested
	// three times long ago: H(d) = 2+1 = 3 = H(a), LastAccess breaks ties.
	g.Record("d", 100, at(2))
	g.Record("e", 100, at(2))
	g.Record("e", 100, at(2))
	items = []Item{{Title: "a", Bytes: 100, LastAccess: at(0)}, {Title: "d", Bytes: 100, LastAccess: at(2)}, {Title: "e", Bytes: 100, LastAccess: at(2)}}
	v, _ = g.Victims(items, 100, at(3))
	if !slices.Equal(v, []string{"a"}) {
		t.Fatalf("after inflation victims %v, want [a]", v)
	}

	s := NewGDSFClassic(100)
	s.Record("small", 100, at(0)) // 1*(100+100)/100 = 2
	s.Record("big", 900, at(0))   // 1*(100+900)/900 = 1.11
	s.Record("big", 900, at(0))   // 2.22
	v, _ = s.Victims([]Item{{Title: "small", Bytes: 100}, {Title: "big", Bytes: 900}}, 1, at(1))
	if !slices.Equal(v, []string{"small"}) {
		t.Fatalf("size-aware victims %v, want [small]", v)
	}
}

func TestGDSFCopiesCheapen(t *testing.T) {
	g := NewGDSFClassic(0)
	for range 3 {
		g.Record("replicated", 100, at(0))
	}
	g.Record("sole", 100, at(0))
	g.Record("sole", 100, at(0))
	// H(replicated) = 3/(1+2) = 1 < H(sole) = 2
	v, _ := g.Victims([]Item{{Title: "replicated", Bytes: 100, Copies: 2}, {Title: "sole", Bytes: 100}}, 1, at(1))
	if !slices.Equal(v, []string{"replicated"}) {
		t.Fatalf("victims %v", v)
	}
}

// Without Record calls gdsf-classic learns from Item.Hits.
func TestGDSFClassicWithoutRecorder(t *testing.T) {
	g := NewGDSFClassic(0)
	items := []Item{{Title: "a", Bytes: 10, Hits: 5}, {Title: "b", Bytes: 10, Hits: 2}}
	v, _ := g.Victims(items, 1, at(0))
	if !slices.Equal(v, []string{"b"}) {
		t.Fatalf("victims %v", v)
	}
	// L is now 2; "c" arrives with one hit (H 3), "a" gains 3 hits at L=2 (H 2+8).
	items = []Item{{Title: "a", Bytes: 10, Hits: 8}, {Title: "c", Bytes: 10, Hits: 1}}
	v, _ = g.Victims(items, 1, at(1))
	if !slices.Equal(v, []string{"c"}) {
		t.Fatalf("victims %v", v)
	}
}

// TestWTinyLFUAdmission: a frequently requested title pushed out of the
// window survives against a rarely requested probation title, and a
// one-hit title does not displace a frequent one.
func TestWTinyLFUAdmission(t *testing.T) {
	w := NewWTinyLFU()
	w.WindowShare = 0.25 // window of one 100-byte title on a 400-byte disk
	var disk []Item
	store := func(title string) {
		disk = append(disk, Item{Title: title, Bytes: 100})
	}
	drop := func(ts []string) {
		disk = slices.DeleteFunc(disk, func(it Item) bool { return slices.Contains(ts, it.Title) })
	}
	// Fill the disk: a, b, c, d (a requested often).
	for _, title := range []string{"a", "b", "c", "d"} {
		w.Record(title, 100, at(0))
		store(title)
	}
	for range 5 {
		w.Record("a", 100, at(1))
	}
	// "e" (one request) arrives: the window's previous title competes with
	// probation's least recent. Whatever is evicted, "a" (protected now)
	// must not be.
	w.Record("e", 100, at(2))
	v, ok := w.Victims(disk, 100, at(2))
	if !ok || len(v) != 1 || v[0] == "a" {
		t.Fatalf("victims %v ok=%v", v, ok)
	}
	drop(v)
	store("e")
	// A big one-hit title larger than the window must win admission over
	// frequently requested victims to be kept.
	for range 6 {
		w.Record("b", 100, at(3))
		w.Record("c", 100, at(3))
		w.Record("d", 100, at(3))
	}
	w.Record("huge", 300, at(4))
	vict := []Item{{Title: "b", Bytes: 100}, {Title: "c", Bytes: 100}}
	if w.Admit("huge", 300, vict, at(4)) {
		t.Fatal("one-hit title admitted over frequent victims")
	}
	if w.Frequency("b") < 2 {
		t.Fatalf("sketch lost counts: %d", w.Frequency("b"))
	}
}

// TestWTinyLFUKeepsVictimsOfARefusedFill: the titles Victims names stay
// in the policy's segments when Admit refuses the fill they were to make
// room for (the owner evicts nothing); otherwise the next call forgets
// them, as the owner evicted them.
func TestWTinyLFUKeepsVictimsOfARefusedFill(t *testing.T) {
	w := NewWTinyLFU()
	w.WindowShare = 0.25
	disk := []Item{{Title: "a", Bytes: 100}, {Title: "b", Bytes: 100}, {Title: "c", Bytes: 100}, {Title: "d", Bytes: 100}}
	for range 4 {
		for _, it := range disk {
			w.Record(it.Title, 100, at(0))
		}
	}
	w.Record("huge", 300, at(1)) // one request, larger than the window
	v, ok := w.Victims(disk, 300, at(1))
	if !ok || len(v) != 3 {
		t.Fatalf("victims %v ok=%v", v, ok)
	}
	var vs []Item
	for _, it := range disk {
		if slices.Contains(v, it.Title) {
			vs = append(vs, it)
		}
	}
	if w.Admit("huge", 300, vs, at(1)) {
		t.Fatal("a one-hit title admitted over titles requested four times")
	}
	w.Record("a", 100, at(2)) // the next call: nothing was evicted
	for _, title := range v {
		if w.ents[title] == nil {
			t.Fatalf("victim %s of a refused fill forgotten", title)
		}
	}
	// The same victims, this time evicted (no Admit refusal): forgotten
	// at the next call.
	v, ok = w.Victims(disk, 300, at(3))
	if !ok {
		t.Fatal("no victims")
	}
	w.Record("b", 100, at(4))
	for _, title := range v {
		if title != "b" && w.ents[title] != nil {
			t.Fatalf("evicted %s still in the segments", title)
		}
	}
}

func TestCMSketchResetHalves(t *testing.T) {
	s := newCMSketch(64)
	s.sample = 20
	for range 12 {
		s.add("x")
	}
	if e := s.estimate("x"); e != 12 {
		t.Fatalf("estimate %d", e)
	}
	for i := range 8 {
		s.add(fmt.Sprint("y", i))
	}
	if e := s.estimate("x"); e > 7 || e < 5 {
		t.Fatalf("after reset estimate %d, want about 6", e)
	}
}

// TestEvictorsNeverEvictInUseOrPinned is a property test over random disks:
// no policy ever names an item in use, filling or pinned, ok is true exactly
// when the evictable bytes reach need, and the victims free at least need.
func TestEvictorsNeverEvictInUseOrPinned(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range Evictors() {
		ev, _ := NewEvictor(name)
		rec, _ := ev.(Recorder)
		for round := range 300 {
			n := 1 + rng.IntN(12)
			items := make([]Item, n)
			var free int64
			for i := range items {
				it := Item{
					Title:      fmt.Sprintf("t%d", rng.IntN(30)),
					Bytes:      1 + rng.Int64N(1000),
					InUse:      rng.IntN(4) == 0,
					Pinned:     rng.IntN(6) == 0,
					Filling:    rng.IntN(8) == 0,
					LastAccess: at(rng.IntN(100)),
					Hits:       float64(rng.IntN(5)),
					Copies:     rng.IntN(3),
				}
				it.Title = fmt.Sprintf("%s-%d", it.Title, i)
				items[i] = it
				if evictable(&it) {
					free += it.Bytes
				}
				if rec != nil && rng.IntN(2) == 0 {
					rec.Record(it.Title, it.Bytes, at(round))
				}
			}
			need := rng.Int64N(2000)
			v, ok := ev.Victims(items, need, at(round))
			var freed int64
			seen := map[string]bool{}
			for _, title := range v {
				idx := slices.IndexFunc(items, func(it Item) bool { return it.Title == title })
				if idx < 0 || seen[title] {
					t.Fatalf("%s: victim %q unknown or repeated", name, title)
				}
				seen[title] = true
				if !evictable(&items[idx]) {
					t.Fatalf("%s: evicted %+v", name, items[idx])
				}
				freed += items[idx].Bytes
			}
			if ok != (free >= need) || (ok && freed < need) {
				t.Fatalf("%s: need %d evictable %d freed %d ok %v", name, need, free, freed, ok)
			}
		}
	}
}

// TestWTinyLFUContest checks the admission contest by hand: the title
// pushed out of the window is kept only when the sketch counts it more
// often than probation's least recent title.
func TestWTinyLFUContest(t *testing.T) {
	for _, tc := range []struct {
		xHits int
		want  string
	}{{1, "x"}, {4, "a"}} {
		w := NewWTinyLFU()
		w.WindowShare = 0.25
		for _, title := range []string{"a", "b", "c", "d"} {
			w.Record(title, 100, at(0))
		}
		w.Record("x", 100, at(1))
		disk := []Item{{Title: "a", Bytes: 100}, {Title: "b", Bytes: 100}, {Title: "c", Bytes: 100}, {Title: "d", Bytes: 100}}
		// x pushes d out of the window; d ties with probation's least
		// recent (a) and a candidate must beat its victim to stay.
		if v, _ := w.Victims(disk, 100, at(1)); !slices.Equal(v, []string{"d"}) {
			t.Fatalf("first victims %v, want [d]", v)
		}
		disk = append(disk[:3], Item{Title: "x", Bytes: 100})
		for range tc.xHits - 1 {
			w.Record("x", 100, at(2))
		}
		w.Record("y", 100, at(3)) // the window (one title) overflows: x becomes the candidate
		if v, _ := w.Victims(disk, 100, at(3)); !slices.Equal(v, []string{tc.want}) {
			t.Fatalf("x requested %d times: victims %v, want [%s]", tc.xHits, v, tc.want)
		}
	}
}

// TestGDSFOrder checks H = F*C/S by hand, the history kept across an
// eviction, its halving, Copies and the Frequency hook.
func TestGDSFOrder(t *testing.T) {
	g := NewGDSF(100)
	rec := func(title string, n int) {
		for range n {
			g.Record(title, 0, at(0))
		}
	}
	rec("small", 1) // 1*(100+100)/100 = 2
	rec("big", 2)   // 2*(100+900)/900 = 2.22
	rec("mid", 1)   // 1*(100+300)/300 = 1.33
	items := []Item{{Title: "small", Bytes: 100}, {Title: "big", Bytes: 900}, {Title: "mid", Bytes: 300}}
	v, ok := g.Victims(items, 350, at(1))
	if !ok || !slices.Equal(v, []string{"mid", "small"}) {
		t.Fatalf("victims %v", v)
	}
	// "mid" was evicted but keeps its history: one more request makes it
	// 2*400/300 = 2.67, above big's 2.22.
	g.Forget("mid")
	rec("mid", 1)
	v, _ = g.Victims([]Item{{Title: "big", Bytes: 900}, {Title: "mid", Bytes: 300}}, 1, at(2))
	if !slices.Equal(v, []string{"big"}) {
		t.Fatalf("history lost: victims %v", v)
	}
	// 640 more requests (10 per stored title, at least 64 titles) halve
	// every count once.
	before := g.hist["mid"]
	for i := range 640 - g.n {
		g.Record(fmt.Sprint("x", i), 0, at(3))
	}
	if g.hist["mid"] != before/2 {
		t.Fatalf("count %v after the reset, want %v", g.hist["mid"], before/2)
	}
	// A copy elsewhere halves the cost; Frequency overrides the history.
	g.Frequency = func(title string, _ time.Time) float64 { return map[string]float64{"a": 4, "b": 3}[title] }
	v, _ = g.Victims([]Item{{Title: "a", Bytes: 900, Copies: 1}, {Title: "b", Bytes: 900}}, 1, at(4))
	if !slices.Equal(v, []string{"a"}) {
		t.Fatalf("victims %v, want a (4/2 < 3)", v)
	}
}
