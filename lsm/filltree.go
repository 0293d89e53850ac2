package lsm

import "math"

// fillTree is a tournament tree over the nodes for the default policy's
// choice of a fill node: per node the part of the cost of a new fill that
// does not depend on the request (its load and disk term), 1/E, an upper
// bound on its bit/s headroom and its disk room. Each inner node keeps
// the minimum cost and 1/E and the maximum headroom and room below it, so
// a search for the node where a request's fill costs least prunes whole
// subtrees that cannot take it or cannot beat the best found: O(log n)
// nodes visited in the usual case, O(n) only when the nodes that can take
// the request are scattered among many cheaper ones that cannot. Updating
// a node costs O(log n).
type fillTree struct {
	size int       // leaves, a power of two >= number of nodes
	cost []float64 // request-independent cost; +Inf for a node not in service
	inv  []float64 // 1/E, E the weighted capacity in bit/s
	head []int64   // bit/s headroom under the full egress capacity; -1 when none
	room []int64   // disk bytes not in use; math.MaxInt64 when the disk size is unknown
}

// reset sizes the tree for n leaves, all out of service.
func (t *fillTree) reset(n int) {
	size := 1
	for size < n {
		size *= 2
	}
	t.size = size
	t.cost = make([]float64, 2*size)
	t.inv = make([]float64, 2*size)
	t.head = make([]int64, 2*size)
	t.room = make([]int64, 2*size)
	for p := range t.cost {
		t.cost[p] = math.Inf(1)
		t.inv[p] = math.Inf(1)
		t.head[p] = -1
		t.room[p] = -1
	}
}

// set updates leaf i and the path to the root.
func (t *fillTree) set(i int, cost, inv float64, head, room int64) {
	p := t.size + i
	t.cost[p], t.inv[p], t.head[p], t.room[p] = cost, inv, head, room
	for p > 1 {
		p /= 2
		l, r := 2*p, 2*p+1
		t.cost[p] = min(t.cost[l], t.cost[r])
		t.inv[p] = min(t.inv[l], t.inv[r])
		t.head[p] = max(t.head[l], t.head[r])
		t.room[p] = max(t.room[l], t.room[r])
	}
}

// fillSearch is one search of the tree: the eligible node that does not
// hold or fill the request's title minimising cost + bps/E.
type fillSearch struct {
	t     *fillTree
	s     *Scheduler
	r     *Request
	bps   float64
	best  int
	bestC float64
}

// bound returns a lower bound on the cost of a fill below tree node p, or
// +Inf when no node below it can take the request.
func (f *fillSearch) bound(p int) float64 {
	t := f.t
	if t.head[p] < f.r.Bitrate || (f.r.Bytes > 0 && t.room[p] < f.r.Bytes) {
		return math.Inf(1)
	}
	return t.cost[p] + f.bps*t.inv[p]
}

func (f *fillSearch) visit(p int, lb float64) {
	if math.IsInf(lb, 1) || (f.best >= 0 && lb >= f.bestC) {
		return
	}
	if p >= f.t.size {
		// A leaf's bound is its exact cost; Eligible decides what the
		// bounds cannot (slow start); a holder of the title is not a fill.
		i := p - f.t.size
		if _, held := f.s.Nodes[i].titles[f.r.Title]; !held && f.s.Eligible(i, f.r) {
			f.best, f.bestC = i, lb
		}
		return
	}
	l, r := 2*p, 2*p+1
	bl, br := f.bound(l), f.bound(r)
	if br < bl {
		l, r, bl, br = r, l, br, bl
	}
	f.visit(l, bl)
	f.visit(r, br)
}
