package bound

import "slices"

// belady runs Belady's MIN with slots cache entries (with bypass: a title
// requested no sooner than everything cached is not kept) and returns its
// fetches and fetched bytes. Warm titles start cached, the soonest
// requested first when they do not all fit.
func (t *trace) belady(slots int) (int, int64) {
	n := int32(len(t.obj))
	never := n // next use of a title never requested again
	in := make([]bool, len(t.size))
	nextUse := make([]int32, len(t.size))
	var h maxHeap
	count := 0
	insert := func(o, nx int32) {
		in[o] = true
		nextUse[o] = nx
		h.push(nx, o)
		count++
	}
	nxt := func(j int32) int32 {
		if j < 0 {
			return never
		}
		return j
	}
	warm := make([]int, len(t.warmed))
	for i := range warm {
		warm[i] = i
	}
	slices.SortStableFunc(warm, func(a, b int) int { return int(nxt(t.warmNxt[a]) - nxt(t.warmNxt[b])) })
	for _, k := range warm {
		if count < slots {
			insert(t.warmed[k], nxt(t.warmNxt[k]))
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
		if slots <= 0 {
			continue
		}
		if count < slots {
			insert(o, nx)
			continue
		}
		for {
			v, p := h.top()
			if in[p] && nextUse[p] == v {
				break
			}
			h.pop()
		}
		v, p := h.top()
		if v <= nx {
			continue // bypass
		}
		h.pop()
		in[p] = false
		count--
		insert(o, nx)
	}
	return fetches, bytes
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
