package smm

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Item is one title stored on one node, as an eviction policy sees it.
type Item struct {
	Title      string
	Bytes      int64     // bytes on disk
	InUse      bool      // playing or filling: never evicted
	Pinned     bool      // pinned by the operator: never evicted
	LastAccess time.Time // last session start
	Hits       float64   // request count or decayed rate (policy-specific use)
}

// Evictor chooses which titles to remove from a node to free bytes.
type Evictor interface {
	// Name is the policy's name in the config (lru, lfu, gdsf, ...).
	Name() string
	// Victims returns titles of items to evict, in eviction order, whose
	// bytes together reach need, never an item that is InUse or Pinned.
	// When that is impossible it returns what it can and ok false.
	Victims(items []Item, need int64, now time.Time) (titles []string, ok bool)
}

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

// NewEvictor returns the eviction policy called name; the error lists the
// known names.
func NewEvictor(name string) (Evictor, error) {
	evictorsMu.RLock()
	f, ok := evictors[name]
	evictorsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("smm: unknown eviction policy %q (known: %v)", name, Evictors())
	}
	return f(), nil
}

// victimsBy returns evictable items in the order less gives until need
// bytes are reached.
func victimsBy(items []Item, need int64, less func(a, b *Item) bool) ([]string, bool) {
	cand := make([]*Item, 0, len(items))
	for i := range items {
		if !items[i].InUse && !items[i].Pinned {
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
}

// LRU evicts the least recently used titles first.
type LRU struct{}

var _ Evictor = LRU{}

// Name returns "lru".
func (LRU) Name() string { return "lru" }

// Victims implements Evictor.
func (LRU) Victims(items []Item, need int64, _ time.Time) ([]string, bool) {
	return victimsBy(items, need, func(a, b *Item) bool { return a.LastAccess.Before(b.LastAccess) })
}
