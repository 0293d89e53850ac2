package smm

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Item is one title stored on one node, as an eviction policy sees it.
// The caller builds the slice from the node's disk; policies never keep a
// pointer into it.
type Item struct {
	Title string
	// Bytes is the space the title takes on disk, bytes; for a fill in
	// progress, the title's whole size (the space it will take).
	Bytes      int64
	InUse      bool      // playing or filling: never evicted
	Pinned     bool      // pinned by the operator (Pins.Protects): never evicted
	LastAccess time.Time // last session start (lru, tie-breaks elsewhere)
	// Hits is the number of requests for the title served by this node
	// since the title was stored (lfu; gdsf and w-tinylfu use it only
	// for titles they have not seen through Recorder.Record).
	Hits float64
	// Filling is true while a fill from the origin is in progress; it
	// implies InUse.
	Filling bool
	// Copies is the number of complete copies of the title on other alive
	// nodes. gdsf lowers the cost of evicting a title that has copies
	// (its viewers can be sent to them); 0 when unknown.
	Copies int
}

// Evictor chooses which titles to remove from a node to free bytes.
// Instances may keep state per node (gdsf, w-tinylfu): use one instance per
// disk. Not safe for concurrent use.
type Evictor interface {
	// Name is the policy's name in the config (lru, lfu, gdsf, w-tinylfu).
	Name() string
	// Victims returns titles of items to evict, in eviction order, whose
	// bytes together reach need, never an item that is InUse or Pinned.
	// When that is impossible it returns what it can and ok false.
	Victims(items []Item, need int64, now time.Time) (titles []string, ok bool)
}

// RoomChecker is implemented by evictors that know better than the items
// alone whether room can be made (Storage's node evictors mark the
// operator's pins). CanFree reports whether Victims(items, need, now)
// would answer ok, without changing any state.
type RoomChecker interface {
	CanFree(items []Item, need int64, now time.Time) bool
}

// CanFree reports whether ev could free need bytes among items: ev's own
// answer when it is a RoomChecker, else whether the evictable items
// (neither InUse, Filling nor Pinned) hold need bytes, which is when
// Victims answers ok. Unlike Victims it changes no state: ask it, not
// Victims, when nothing will be evicted (gdsf-classic and w-tinylfu treat
// Victims' answer as evictions).
func CanFree(ev Evictor, items []Item, need int64, now time.Time) bool {
	if rc, ok := ev.(RoomChecker); ok {
		return rc.CanFree(items, need, now)
	}
	return evictableBytes(items) >= need
}

// evictableBytes is the bytes of the items a policy may remove.
func evictableBytes(items []Item) int64 {
	var n int64
	for i := range items {
		if evictable(&items[i]) {
			n += items[i].Bytes
		}
	}
	return n
}

// Recorder is implemented by eviction policies that keep state per title
// (gdsf, w-tinylfu). The owner of the disk calls Record for every request
// the node serves, a hit or a fill, before it asks for Victims, and Forget
// when a title leaves the disk for a reason other than Victims (an order of
// the planner or the operator). A policy that never hears these falls back
// on Item.Hits and Item.LastAccess.
type Recorder interface {
	// Record notes one request for title (bytes: the title's size).
	Record(title string, bytes int64, now time.Time)
	// Forget drops what the policy knows about title's copy on this disk.
	Forget(title string)
}

// Admitter is implemented by eviction policies with an admission filter
// (w-tinylfu). A fill always streams to its viewer, so the origin bytes are
// spent either way; Admit only says whether the filled title should be
// kept on disk at the price of evicting victims (the titles Victims
// returned for it, just before). When it returns false the node streams
// the title through without keeping it and evicts nothing, and the
// policy keeps the victims in its own state as if Victims had not been
// asked.
type Admitter interface {
	Admit(title string, bytes int64, victims []Item, now time.Time) bool
}

// DefaultEvictor is the name of the default eviction policy.
const DefaultEvictor = "gdsf"

var (
	evictorsMu sync.RWMutex
	evictors   = map[string]func() Evictor{}
)

// RegisterEvictor makes an eviction policy available by name; it panics on
// a duplicate name (called from init).
func RegisterEvictor(name string, f func() Evictor) {
	evictorsMu.Lock()
	defer evictorsMu.Unlock()
	if _, dup := evictors[name]; dup {
		panic("smm: evictor registered twice: " + name)
	}
	evictors[name] = f
}

// Evictors returns the registered eviction policy names, sorted.
func Evictors() []string {
	evictorsMu.RLock()
	defer evictorsMu.RUnlock()
	out := make([]string, 0, len(evictors))
	for n := range evictors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NewEvictor returns a fresh instance of the eviction policy called name
// ("" means DefaultEvictor); the error lists the known names.
func NewEvictor(name string) (Evictor, error) {
	if name == "" {
		name = DefaultEvictor
	}
	evictorsMu.RLock()
	f, ok := evictors[name]
	evictorsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("smm: unknown eviction policy %q (known: %v)", name, Evictors())
	}
	return f(), nil
}

// evictable reports whether a policy may remove it.
func evictable(it *Item) bool { return !it.InUse && !it.Pinned && !it.Filling }

// victimsBy returns evictable items in the order less gives until need
// bytes are reached.
func victimsBy(items []Item, need int64, less func(a, b *Item) bool) ([]string, bool) {
	cand := make([]*Item, 0, len(items))
	for i := range items {
		if evictable(&items[i]) {
			cand = append(cand, &items[i])
		}
	}
	sort.SliceStable(cand, func(i, j int) bool { return less(cand[i], cand[j]) })
	var out []string
	var freed int64
	for _, it := range cand {
		if freed >= need {
			break
		}
		out = append(out, it.Title)
		freed += it.Bytes
	}
	return out, freed >= need
}

func init() {
	RegisterEvictor("lru", func() Evictor { return LRU{} })
	RegisterEvictor("lfu", func() Evictor { return LFU{} })
}

// LRU evicts the least recently used titles first (by Item.LastAccess).
type LRU struct{}

var _ Evictor = LRU{}

// Name returns "lru".
func (LRU) Name() string { return "lru" }

// Victims implements Evictor.
func (LRU) Victims(items []Item, need int64, _ time.Time) ([]string, bool) {
	return victimsBy(items, need, func(a, b *Item) bool { return a.LastAccess.Before(b.LastAccess) })
}

// LFU evicts the titles with the fewest requests since they were stored
// first (in-cache LFU, by Item.Hits), the least recently used first among
// equals. It has no aging: a title that was hot once stays until
// something hotter displaces it, which is why it is a baseline only.
type LFU struct{}

var _ Evictor = LFU{}

// Name returns "lfu".
func (LFU) Name() string { return "lfu" }

// Victims implements Evictor.
func (LFU) Victims(items []Item, need int64, _ time.Time) ([]string, bool) {
	return victimsBy(items, need, func(a, b *Item) bool {
		if a.Hits != b.Hits {
			return a.Hits < b.Hits
		}
		return a.LastAccess.Before(b.LastAccess)
	})
}
