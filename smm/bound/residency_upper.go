package bound

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// upper runs a feasible schedule: titles enter the cache when one of their
// busy intervals starts and they are absent; when room is needed, the
// cached title not in use whose next busy interval starts last is evicted
// (one never used again at once). Warm titles start cached, the soonest
// needed first while they fit. It fails with ErrInfeasible when room
// cannot be made (never after buildResidency's check).
func (t *rtrace) upper(capacity int64) (int, int64, error) {
	type ev struct {
		at    float64
		start bool
		k     int32 // busy interval
	}
	// An empty busy interval (instant requests) has a start only.
	evs := make([]ev, 0, 2*len(t.busy))
	for k, b := range t.busy {
		evs = append(evs, ev{b.a, true, int32(k)})
		if b.b > b.a {
			evs = append(evs, ev{b.b, false, int32(k)})
		}
	}
	// Ends before starts at one instant (intervals are half-open); then
	// busy order.
	slices.SortStableFunc(evs, func(x, y ev) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		if x.start != y.start {
			if x.start {
				return 1
			}
			return -1
		}
		return cmp.Compare(x.k, y.k)
	})
	rank := make([]int32, len(t.busy)) // position of each busy interval's start
	for i, e := range evs {
		if e.start {
			rank[e.k] = int32(i)
		}
	}
	never := int32(len(evs))
	nextOf := func(k int32) int32 { // rank of the object's next busy start
		if int(k)+1 < len(t.busy) && t.busy[k+1].obj == t.busy[k].obj {
			return rank[k+1]
		}
		return never
	}
	nobj := len(t.size)
	cached := make([]bool, nobj)
	inUse := make([]bool, nobj)
	nextUse := make([]int32, nobj)
	var h maxHeap
	var used int64
	// Warm objects, the soonest needed first while they fit.
	firstBusy := make([]int32, nobj)
	for i := range firstBusy {
		firstBusy[i] = -1
	}
	for k := len(t.busy) - 1; k >= 0; k-- {
		firstBusy[t.busy[k].obj] = int32(k)
	}
	var warm []int32
	for o := range nobj {
		if t.warm[o] && firstBusy[o] >= 0 {
			warm = append(warm, int32(o))
		}
	}
	slices.SortFunc(warm, func(a, b int32) int { return cmp.Compare(rank[firstBusy[a]], rank[firstBusy[b]]) })
	for _, o := range warm {
		if used+t.size[o] <= capacity {
			cached[o], nextUse[o] = true, rank[firstBusy[o]]
			h.push(nextUse[o], o)
			used += t.size[o]
		}
	}
	var fetches int
	var bytes int64
	release := func(k int32) {
		o := t.busy[k].obj
		inUse[o] = false
		nx := nextOf(k)
		if nx == never {
			cached[o] = false
			used -= t.size[o]
			return
		}
		nextUse[o] = nx
		h.push(nx, o)
	}
	for _, e := range evs {
		if !e.start {
			release(e.k)
			continue
		}
		o := t.busy[e.k].obj
		if b := t.busy[e.k]; b.b == b.a {
			// An instant: fetched when absent, kept only when it is needed
			// again sooner than a title evicted for it (bypass, as MIN).
			if cached[o] {
				continue
			}
			fetches++
			bytes += t.size[o]
			nx := nextOf(e.k)
			if nx == never || t.size[o] > capacity {
				continue
			}
			for used+t.size[o] > capacity && len(h) > 0 {
				v, p := h.top()
				if !cached[p] || inUse[p] || nextUse[p] != v {
					h.pop()
					continue // stale entry
				}
				if v <= nx {
					break
				}
				h.pop()
				cached[p] = false
				used -= t.size[p]
			}
			if used+t.size[o] <= capacity {
				cached[o], nextUse[o] = true, nx
				h.push(nx, o)
				used += t.size[o]
			}
			continue
		}
		inUse[o] = true
		if !cached[o] {
			fetches++
			bytes += t.size[o]
			for used+t.size[o] > capacity {
				if len(h) == 0 {
					return 0, 0, fmt.Errorf("%w: at %.3f s", ErrInfeasible, e.at)
				}
				v, p := h.top()
				h.pop()
				if !cached[p] || inUse[p] || nextUse[p] != v {
					continue // stale entry
				}
				cached[p] = false
				used -= t.size[p]
			}
			cached[o] = true
			used += t.size[o]
		}
	}
	return fetches, bytes, nil
}

// static is a fixed set of titles kept all along, chosen by decreasing
// number of busy intervals (the smaller first among equals) while they fit
// in the room the busiest instant's sessions leave; every other title is
// fetched once per busy interval. A feasible schedule: at any instant the
// cache holds the set plus at most the busiest instant's bytes in use.
func (t *rtrace) static(capacity int64) int64 {
	count := make([]int32, len(t.size))
	for _, b := range t.busy {
		count[b.obj]++
	}
	order := make([]int32, len(t.size))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		if count[a] != count[b] {
			return cmp.Compare(count[b], count[a])
		}
		return cmp.Compare(t.size[a], t.size[b])
	})
	room := capacity - int64(math.Ceil(t.peak))
	var used, bytes int64
	for _, o := range order {
		if count[o] == 0 {
			continue
		}
		if used+t.size[o] <= room {
			used += t.size[o]
			if !t.warm[o] {
				bytes += t.size[o]
			}
			continue
		}
		bytes += int64(count[o]) * t.size[o]
	}
	return bytes
}
