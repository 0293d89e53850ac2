package smm

import (
	"sort"
	"time"
)

func init() {
	RegisterEvictor("gdsf-classic", func() Evictor { return NewGDSFClassic(DefaultSetupBytes) })
}

// GDSFClassic is Greedy-Dual-Size-Frequency (L. Cherkasova, "Improving WWW Proxies
// Performance with Greedy-Dual-Size-Frequency Caching Policy", HP Labs
// HPL-98-69, 1998). Each title p on the disk has a priority
//
//	H(p) = L + F(p) * C(p) / S(p)
//
// where F is its request count since it was stored, S its size in bytes,
// C the cost of fetching it again and L an inflation value that rises to
// the priority of each evicted title, so titles that stop being requested
// age out. Victims evicts the lowest H first.
//
// The cost is what the operator pays the origin: C = SetupBytes + S, the
// title's bytes plus a fixed per-transfer cost in bytes. For titles much
// larger than SetupBytes this makes F*C/S close to F (GDSF tuned for byte
// misses, as Cherkasova's GD*-with-packet-cost); small titles get a little
// extra credit for the transfer they would cost. The cost is divided by
// 1+Item.Copies: a title with complete copies on other nodes costs little
// to evict, its viewers can be sent there.
//
// GDSFClassic learns F and H through Recorder; without it, it takes F
// from Item.Hits and treats a rise of Hits as a request at the current L.
// It is registered as "gdsf-classic" for comparison with gdsf, whose aging
// suits VOD demand better (see GDSF).
type GDSFClassic struct {
	SetupBytes int64 // fixed cost of one origin transfer, bytes; >= 0

	clock    float64 // L
	ents     map[string]*gdsfEnt
	recorded bool // Record was called: ignore Item.Hits
	// incoming is the last title Record saw, until a Victims call frees
	// room: when it is not on the disk then, the room is for its fill,
	// and it takes the L after its victims.
	incoming string
}

type gdsfEnt struct {
	f    float64 // requests since stored
	at   float64 // L when last requested
	hits float64 // Item.Hits when last synchronised (no Recorder)
}

var (
	_ Evictor  = (*GDSFClassic)(nil)
	_ Recorder = (*GDSFClassic)(nil)
)

// NewGDSFClassic returns an empty GDSFClassic with the given per-transfer cost in bytes
// (negative means 0).
func NewGDSFClassic(setupBytes int64) *GDSFClassic {
	return &GDSFClassic{SetupBytes: max(0, setupBytes), ents: map[string]*gdsfEnt{}}
}

// Name returns "gdsf-classic".
func (*GDSFClassic) Name() string { return "gdsf-classic" }

// Clock returns the inflation value L.
func (g *GDSFClassic) Clock() float64 { return g.clock }

// Record implements Recorder: one more request for title.
func (g *GDSFClassic) Record(title string, _ int64, _ time.Time) {
	g.recorded = true
	e := g.ents[title]
	if e == nil {
		e = &gdsfEnt{}
		g.ents[title] = e
	}
	e.f++
	e.at = g.clock
	g.incoming = title
}

// Forget implements Recorder: title left the disk by an order that did not
// come from Victims. L stays: such a title was not chosen as the lowest
// priority, so raising L to it would age every other title at once.
func (g *GDSFClassic) Forget(title string) {
	delete(g.ents, title)
	if g.incoming == title {
		g.incoming = ""
	}
}

// Priority returns H for it as Victims would rank it now.
func (g *GDSFClassic) Priority(it *Item) float64 {
	e := g.sync(it)
	s := float64(max(it.Bytes, 1))
	c := (float64(g.SetupBytes) + s) / float64(1+max(it.Copies, 0))
	return e.at + e.f*c/s
}

func (g *GDSFClassic) sync(it *Item) *gdsfEnt {
	e := g.ents[it.Title]
	if e == nil {
		e = &gdsfEnt{f: max(it.Hits, 1), at: g.clock, hits: it.Hits}
		g.ents[it.Title] = e
		return e
	}
	if !g.recorded && it.Hits > e.hits {
		e.f += it.Hits - e.hits
		e.hits = it.Hits
		e.at = g.clock
	}
	return e
}

// Victims implements Evictor. When it can free need bytes it treats its
// victims as evicted: L rises to the highest priority among them, and the
// title being filled (the last one Record saw, when it is not among
// items) is stamped with that L, H = L' + F*C/S with L' the
// value after the evictions that make its room, as in the paper. Ask
// smm.CanFree, not Victims, when nothing will be evicted.
func (g *GDSFClassic) Victims(items []Item, need int64, _ time.Time) ([]string, bool) {
	type cand struct {
		it *Item
		h  float64
	}
	cs := make([]cand, 0, len(items))
	for i := range items {
		it := &items[i]
		h := g.Priority(it)
		if evictable(it) {
			cs = append(cs, cand{it, h})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].h != cs[j].h {
			return cs[i].h < cs[j].h
		}
		return cs[i].it.LastAccess.Before(cs[j].it.LastAccess)
	})
	var out []string
	var freed int64
	top := g.clock
	for _, c := range cs {
		if freed >= need {
			break
		}
		out = append(out, c.it.Title)
		freed += c.it.Bytes
		top = max(top, c.h)
	}
	ok := freed >= need
	if ok {
		g.clock = top
		for _, t := range out {
			delete(g.ents, t)
		}
		if e := g.ents[g.incoming]; e != nil && !onDisk(items, g.incoming) {
			e.at = g.clock
		}
		g.incoming = ""
	}
	g.prune(items)
	return out, ok
}

// onDisk reports whether title is among items.
func onDisk(items []Item, title string) bool {
	for i := range items {
		if items[i].Title == title {
			return true
		}
	}
	return false
}

// prune drops state of titles no longer on the disk once it outgrows it,
// so a caller that never calls Forget does not grow it without bound.
func (g *GDSFClassic) prune(items []Item) {
	if len(g.ents) <= 2*len(items)+64 {
		return
	}
	on := make(map[string]struct{}, len(items))
	for i := range items {
		on[items[i].Title] = struct{}{}
	}
	for t := range g.ents {
		if _, ok := on[t]; !ok {
			delete(g.ents, t)
		}
	}
}
