package smm

import (
	"container/list"
	"maps"
	"sort"
	"time"
)

func init() {
	RegisterEvictor("w-tinylfu", func() Evictor { return NewWTinyLFU() })
}

// WTinyLFU is W-TinyLFU (G. Einziger, R. Friedman, B. Manes, "TinyLFU: A
// Highly Efficient Cache Admission Policy", ACM Transactions on Storage 13(4),
// 2017), sized in bytes: a window LRU (WindowShare of the disk) in front of
// a main segmented LRU (probation, and protected = ProtectedShare of the
// main part), with a TinyLFU admission filter: a count-min sketch of
// request frequencies (4 rows of 4-bit counters, halved every 10 requests
// per stored title, as the paper's reset; at least as many counters a row
// as titles stored, 16,384 to begin with, doubled as more are stored, as
// Caffeine's sketch grows with its cache).
//
// A new title enters the window. Titles pushed out of the window become
// candidates at the head of probation; when room must be made, each
// candidate competes with probation's least recently used title and the
// one the sketch deems less frequent is evicted (the paper's admission).
// For a VOD disk the fill is streamed to its viewer whatever happens, so a
// refused admission means "do not keep this fill": when a title alone is
// larger than the window it competes at once, through Admitter.Admit, and
// a false answer tells the node to stream it through without keeping it.
//
// It needs Recorder calls to see requests; without them (a node's own
// evictor) every stored title is an unknown probation entry, kept in
// Item.LastAccess order, and the policy is LRU. A title it has not heard
// of (a prefetch) joins probation's least recent end, by LastAccess.
// The disk's size is inferred from the Victims calls (the bytes on disk
// plus the free space they imply).
type WTinyLFU struct {
	WindowShare    float64 // share of the disk for the window, 0 < x < 1; default 0.01
	ProtectedShare float64 // share of the main part that is protected, 0 < x < 1; default 0.8

	capacity        int64 // bytes, inferred
	sketch          cmSketch
	ents            map[string]*tlEnt
	win, prob, prot list.List // front = most recent
	winBytes        int64
	protBytes       int64
	total           int64 // bytes of all entries
	incoming        string
	recorded        bool     // Record was called
	cands           []*tlEnt // moved out of the window by the last Record
	pending         []*tlEnt // the last Victims, forgotten at the next call unless Admit refused
}

const (
	segWindow = iota
	segProbation
	segProtected
)

type tlEnt struct {
	title string
	bytes int64
	seg   int
	el    *list.Element
	cand  bool
}

var (
	_ Evictor  = (*WTinyLFU)(nil)
	_ Recorder = (*WTinyLFU)(nil)
	_ Admitter = (*WTinyLFU)(nil)
)

// NewWTinyLFU returns an empty W-TinyLFU with a 1% window and an 80%
// protected segment, the paper's W-TinyLFU(1%).
func NewWTinyLFU() *WTinyLFU {
	return &WTinyLFU{WindowShare: 0.01, ProtectedShare: 0.8, ents: map[string]*tlEnt{}, sketch: newCMSketch(1 << 14)}
}

// Name returns "w-tinylfu".
func (*WTinyLFU) Name() string { return "w-tinylfu" }

// Frequency returns the sketch's estimate of title's recent request count
// (0..15).
func (w *WTinyLFU) Frequency(title string) int { return int(w.sketch.estimate(title)) }

func (w *WTinyLFU) capEstimate() int64 { return max(w.capacity, w.total) }

func (w *WTinyLFU) windowTarget() int64 {
	return int64(w.WindowShare * float64(w.capEstimate()))
}

func (w *WTinyLFU) protectedTarget() int64 {
	return int64(w.ProtectedShare * float64(w.capEstimate()-w.windowTarget()))
}

func (w *WTinyLFU) list(seg int) *list.List {
	switch seg {
	case segWindow:
		return &w.win
	case segProbation:
		return &w.prob
	}
	return &w.prot
}

// move puts e at the front of segment seg.
func (w *WTinyLFU) move(e *tlEnt, seg int) {
	if e.el != nil {
		w.list(e.seg).Remove(e.el)
		w.account(e, -1)
	}
	e.seg = seg
	e.el = w.list(seg).PushFront(e)
	w.account(e, +1)
}

func (w *WTinyLFU) account(e *tlEnt, sign int64) {
	switch e.seg {
	case segWindow:
		w.winBytes += sign * e.bytes
	case segProtected:
		w.protBytes += sign * e.bytes
	}
}

func (w *WTinyLFU) remove(e *tlEnt) {
	w.list(e.seg).Remove(e.el)
	w.account(e, -1)
	w.total -= e.bytes
	delete(w.ents, e.title)
	if w.incoming == e.title {
		w.incoming = ""
	}
}

// commit forgets the titles the last Victims named: the owner evicted
// them (Admit did not refuse the fill they made room for).
func (w *WTinyLFU) commit() {
	for _, e := range w.pending {
		if w.ents[e.title] == e {
			w.remove(e)
		}
	}
	w.pending = w.pending[:0]
}

// Record implements Recorder.
func (w *WTinyLFU) Record(title string, bytes int64, _ time.Time) {
	w.commit()
	w.recorded = true
	if len(w.ents) >= w.sketch.width() {
		// as many counters a row as titles held, at least: a sketch
		// narrower than the titles it tells apart counts them together
		w.sketch = w.sketch.grown(2*len(w.ents), maps.Keys(w.ents))
	}
	w.sketch.sample = 10 * max(len(w.ents), 64)
	w.sketch.add(title)
	for _, c := range w.cands {
		c.cand = false
	}
	w.cands = w.cands[:0]
	e := w.ents[title]
	switch {
	case e == nil:
		e = &tlEnt{title: title, bytes: max(bytes, 0)}
		w.ents[title] = e
		w.total += e.bytes
		w.move(e, segWindow)
		w.incoming = title
	case e.seg == segWindow:
		w.win.MoveToFront(e.el)
	case e.seg == segProbation:
		w.move(e, segProtected)
		for w.protBytes > w.protectedTarget() && w.prot.Len() > 1 {
			w.move(w.prot.Back().Value.(*tlEnt), segProbation)
		}
	default:
		w.prot.MoveToFront(e.el)
	}
	for w.winBytes > w.windowTarget() && w.win.Len() > 0 {
		c := w.win.Back().Value.(*tlEnt)
		w.move(c, segProbation)
		c.cand = true
		w.cands = append(w.cands, c)
	}
}

// Forget implements Recorder.
func (w *WTinyLFU) Forget(title string) {
	w.commit()
	if e := w.ents[title]; e != nil {
		w.remove(e)
	}
}

// Victims implements Evictor. The victims stay in the segments until the
// next call, so that Admit can still refuse the fill they make room for
// and keep them.
func (w *WTinyLFU) Victims(items []Item, need int64, _ time.Time) ([]string, bool) {
	w.commit()
	on := make(map[string]*Item, len(items))
	var used int64
	for i := range items {
		on[items[i].Title] = &items[i]
		used += items[i].Bytes
	}
	w.reconcile(items, on)
	if in := w.ents[w.incoming]; in != nil {
		w.capacity = max(w.capacity, used+in.bytes-need)
	} else {
		w.capacity = max(w.capacity, used)
	}
	out := map[*tlEnt]bool{}
	ok := func(e *tlEnt) bool {
		it := on[e.title]
		return it != nil && evictable(it) && !out[e]
	}
	// back returns the least recently used acceptable entry of l.
	back := func(l *list.List, accept func(*tlEnt) bool) *tlEnt {
		for el := l.Back(); el != nil; el = el.Prev() {
			if e := el.Value.(*tlEnt); accept(e) {
				return e
			}
		}
		return nil
	}
	var order []*tlEnt
	var freed int64
	evict := func(e *tlEnt) {
		out[e] = true
		order = append(order, e)
		freed += e.bytes
	}
	ci := 0
	for freed < need {
		var cand *tlEnt
		for ; ci < len(w.cands); ci++ {
			if c := w.cands[ci]; c.cand && ok(c) {
				cand = c
				break
			}
		}
		victim := back(&w.prob, func(e *tlEnt) bool { return !e.cand && ok(e) })
		if victim == nil {
			victim = back(&w.prot, ok)
		}
		switch {
		case cand != nil && victim != nil:
			ci++
			if w.sketch.estimate(cand.title) > w.sketch.estimate(victim.title) {
				cand.cand = false
				evict(victim)
			} else {
				evict(cand)
			}
		case cand != nil:
			ci++
			evict(cand)
		case victim != nil:
			evict(victim)
		default:
			e := back(&w.win, ok)
			if e == nil {
				e = back(&w.prob, ok)
			}
			if e == nil {
				return titlesOf(order), false
			}
			evict(e)
		}
	}
	w.pending = append(w.pending[:0], order...)
	return titlesOf(order), true
}

// reconcile makes the segments match the disk: unknown stored titles join
// probation as its least recent entries, the least recently used
// (Item.LastAccess) last; entries no longer on the disk (other than the
// title being filled now) are dropped. Without Record calls, probation
// (every entry then) is kept in LastAccess order: LRU.
func (w *WTinyLFU) reconcile(items []Item, on map[string]*Item) {
	for t, e := range w.ents {
		if _, ok := on[t]; !ok && t != w.incoming {
			w.remove(e)
		}
	}
	byRecency := make([]*Item, 0, len(items))
	for i := range items {
		it := &items[i]
		e := w.ents[it.Title]
		if e == nil || !w.recorded {
			byRecency = append(byRecency, it)
		}
		if e == nil {
			continue
		}
		if e.bytes != it.Bytes {
			w.account(e, -1)
			w.total += it.Bytes - e.bytes
			e.bytes = it.Bytes
			w.account(e, +1)
		}
	}
	sort.SliceStable(byRecency, func(i, j int) bool { return byRecency[i].LastAccess.After(byRecency[j].LastAccess) })
	for _, it := range byRecency {
		e := w.ents[it.Title]
		if e == nil {
			e = &tlEnt{title: it.Title, bytes: it.Bytes, seg: segProbation}
			e.el = w.prob.PushBack(e)
			w.ents[it.Title] = e
			w.total += e.bytes
		} else if e.seg == segProbation {
			w.prob.MoveToBack(e.el)
		}
	}
}

// Admit implements Admitter: a title that did not fit in the window is kept
// only when the sketch deems it more frequent than every victim. When it
// is not, the victims the last Victims named stay where they were (the
// owner evicts nothing), and the refused title leaves the segments (it is
// not on the disk; the sketch keeps its count, but for a growth of the
// sketch, which keeps the held titles' only): its next request makes it
// a new entry, which must pass the filter again.
func (w *WTinyLFU) Admit(title string, _ int64, victims []Item, _ time.Time) bool {
	e := w.ents[title]
	if e == nil || !e.cand {
		return true
	}
	f := w.sketch.estimate(title)
	for i := range victims {
		if w.sketch.estimate(victims[i].Title) >= f {
			w.pending = w.pending[:0]
			w.remove(e)
			return false
		}
	}
	return true
}

func titlesOf(es []*tlEnt) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.title
	}
	return out
}
