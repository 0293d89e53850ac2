package bound

import "slices"

// belady runs Belady's rule with a cache of capacity units, a title
// taking its size in units (1 when unit): when room is needed, the cached
// title requested again last is evicted, unless the title being fetched is
// requested later still, in which case it is not kept (bypass). With equal
// sizes this is MIN, the optimum; with variable sizes it is a feasible
// offline schedule. It returns its fetches and fetched bytes. Warm titles
// start cached, the soonest requested first when they do not all fit.
func (t *trace) belady(capacity int64, unit bool) (int, int64) {
	n := int32(len(t.obj))
	never := n // next use of a title never requested again
	in := make([]bool, len(t.size))
	nextUse := make([]int32, len(t.size))
	var h maxHeap
	var used int64
	size := func(o int32) int64 {
		if unit {
			return 1
		}
		return t.size[o]
	}
	insert := func(o, nx int32) {
		in[o] = true
		nextUse[o] = nx
		h.push(nx, o)
		used += size(o)
	}
	nxt := func(j int32) int32 {
		if j < 0 {
			return never
		}
		return j
	}
	// furthest returns the cached title requested again last.
	furthest := func() (int32, int32) {
		for {
			v, p := h.top()
			if in[p] && nextUse[p] == v {
				return v, p
			}
			h.pop()
		}
	}
	warm := make([]int, len(t.warmed))
	for i := range warm {
		warm[i] = i
	}
	slices.SortStableFunc(warm, func(a, b int) int { return int(nxt(t.warmNxt[a]) - nxt(t.warmNxt[b])) })
	for _, k := range warm {
		if o := t.warmed[k]; used+size(o) <= capacity {
			insert(o, nxt(t.warmNxt[k]))
		}
	}
	var fetches int
	var bytes int64
	for i := range n {
		o, nx := t.obj[i], nxt(t.next[i])
		if in[o] {
			nextUse[o] = nx
			h.push(nx, o)
			continue
		}
		fetches++
		bytes += t.size[o]
		if size(o) > capacity {
			continue
		}
		keep := true
		for used+size(o) > capacity {
			v, p := furthest()
			if v <= nx {
				keep = false // bypass: o is needed no sooner than the rest
				break
			}
			h.pop()
			in[p] = false
			used -= size(p)
		}
		if keep {
			insert(o, nx)
		}
	}
	return fetches, bytes
}

// static is the origin bytes of the best fixed set of titles chosen
// knowing how often each is requested in the whole trace but not when:
// titles taken by decreasing request count (the smaller first among
// equals) while they fit, each fetched once and kept; the others fetched
// on every request. Warm titles in the set are not fetched.
func (t *trace) static(capacity int64) int64 {
	count := make([]int32, len(t.size))
	for _, o := range t.obj {
		count[o]++
	}
	warm := make([]bool, len(t.size))
	for _, o := range t.warmed {
		warm[o] = true
	}
	order := make([]int32, len(t.size))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		if count[a] != count[b] {
			return int(count[b] - count[a])
		}
		return cmpInt64(t.size[a], t.size[b])
	})
	var used, bytes int64
	for _, o := range order {
		if count[o] == 0 {
			continue
		}
		if used+t.size[o] <= capacity {
			used += t.size[o]
			if !warm[o] {
				bytes += t.size[o]
			}
			continue
		}
		bytes += int64(count[o]) * t.size[o]
	}
	return bytes
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maxHeap is a binary max-heap of (next use, object) packed in uint64.
type maxHeap []uint64

func (h *maxHeap) push(next, obj int32) {
	*h = append(*h, uint64(next)<<32|uint64(uint32(obj)))
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] >= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h maxHeap) top() (int32, int32) { return int32(h[0] >> 32), int32(uint32(h[0])) }

func (h *maxHeap) pop() {
	s := *h
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l] > s[m] {
			m = l
		}
		if r < len(s) && s[r] > s[m] {
			m = r
		}
		if m == i {
			break
		}
		s[m], s[i] = s[i], s[m]
		i = m
	}
	*h = s
}
