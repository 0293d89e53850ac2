package smm

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func TestLRUNeverEvictsInUse(t *testing.T) {
	items := []Item{
		{Title: "old-playing", Bytes: 100, InUse: true, LastAccess: t0},
		{Title: "old", Bytes: 100, LastAccess: t0.Add(time.Second)},
		{Title: "pinned", Bytes: 100, Pinned: true, LastAccess: t0},
		{Title: "new", Bytes: 100, LastAccess: t0.Add(time.Hour)},
	}
	v, ok := LRU{}.Victims(items, 150, t0)
	if !ok || len(v) != 2 || v[0] != "old" || v[1] != "new" {
		t.Fatalf("victims %v ok=%v", v, ok)
	}
	if _, ok := (LRU{}).Victims(items, 250, t0); ok {
		t.Fatal("claimed to free more than evictable")
	}
}

func TestPopularityDecay(t *testing.T) {
	p := NewPopularity(time.Minute)
	for i := 0; i < 60; i++ {
		p.Observe("a", t0)
	}
	r0 := p.Rate("a", t0)
	r1 := p.Rate("a", t0.Add(time.Minute))
	if math.Abs(r1/r0-0.5) > 1e-9 {
		t.Fatalf("after one half-life %v -> %v", r0, r1)
	}
	if p.Count("a") != 60 || p.Count("b") != 0 {
		t.Fatal("counts")
	}
}

func TestNewEvictorUnknown(t *testing.T) {
	if _, err := NewEvictor("nope"); err == nil {
		t.Fatal("unknown evictor accepted")
	}
}
