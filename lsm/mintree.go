package lsm

import "math"

// minTree is a tournament tree over per-node scores: the index of the
// smallest score in O(1), an update in O(log n). The scheduler keeps one
// over the default policy's cost of a fill on each node, so a decision at
// 1,000 nodes does not scan them all.
type minTree struct {
	size int       // leaves, a power of two >= number of nodes
	val  []float64 // 2*size: internal nodes at 1..size-1, leaves at size..2*size-1
	arg  []int32   // node index of the minimum below each tree node, -1 when none
}

// reset sizes the tree for n leaves, all +Inf.
func (t *minTree) reset(n int) {
	size := 1
	for size < n {
		size *= 2
	}
	t.size = size
	t.val = make([]float64, 2*size)
	t.arg = make([]int32, 2*size)
	for i := range t.val {
		t.val[i] = math.Inf(1)
		t.arg[i] = -1
	}
	for i := 0; i < size; i++ {
		t.arg[size+i] = int32(i)
	}
}

// set gives leaf i the score v and fixes the path to the root.
func (t *minTree) set(i int, v float64) {
	p := t.size + i
	t.val[p] = v
	for p > 1 {
		p /= 2
		l, r := 2*p, 2*p+1
		if t.val[r] < t.val[l] {
			t.val[p], t.arg[p] = t.val[r], t.arg[r]
		} else {
			t.val[p], t.arg[p] = t.val[l], t.arg[l]
		}
	}
}

// min returns the leaf with the smallest finite score, or -1.
func (t *minTree) min() int {
	if t.size == 0 || math.IsInf(t.val[1], 1) {
		return -1
	}
	return int(t.arg[1])
}
