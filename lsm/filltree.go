package lsm

import "math"

// fillTree is a tournament tree over the nodes for the default policy's
// choice of a fill node. A node's cost of a new fill of a session of x
// bit/s is c + x/E: c its load and disk term (independent of the
// request), E its weighted capacity. Each tree node keeps, for the
// leaves below it, g(x) = min(c + x/E) at a few sample bitrates
// (fillSamples), the least 1/E, the most bit/s headroom and the most disk
// room. g is concave in x, so between two samples it lies above the chord
// joining them, and past the last one it rises at least by the least 1/E:
// that gives a lower bound on the cost of a fill below any tree node, exact
// at the samples. A search for the node where a request's fill costs least
// visits subtrees in the order of their bounds and prunes those that
// cannot take the request (headroom, room) or cannot beat the best found:
// about 2 log n tree nodes in the usual case, more only when the nodes
// that can take the request are scattered among cheaper ones that cannot.
// Updating a node costs O(log n).
type fillTree struct {
	size int        // leaves, a power of two >= number of nodes
	v    []fillNode // 2*size: inner nodes at 1..size-1, leaves at size..2*size-1
}

// fillSamples are the bitrates, bit/s, at which the tree keeps g exactly:
// the usual IPTV bitrates fall on them or between two close ones.
var fillSamples = [...]float64{0, 2e6, 4e6, 8e6, 16e6, 32e6}

// fillNode is a leaf's values, or the bounds of the leaves below.
type fillNode struct {
	g    [len(fillSamples)]float64 // min of c + x/E at each sample x; +Inf when no node is in service
	inv  float64                   // least 1/E, E the weighted capacity in bit/s
	head int64                     // most bit/s headroom under the full egress capacity; -1 when none
	room int64                     // most disk bytes not in use; math.MaxInt64 when the disk size is unknown
}

var noFill = func() fillNode {
	f := fillNode{inv: math.Inf(1), head: -1, room: -1}
	for k := range f.g {
		f.g[k] = math.Inf(1)
	}
	return f
}()

// fillLeaf returns a leaf of cost c (before the session) and capacity E.
func fillLeaf(c, e float64, head, room int64) fillNode {
	f := fillNode{inv: 1 / e, head: head, room: room}
	for k, x := range fillSamples {
		f.g[k] = c + x*f.inv
	}
	return f
}

// reset sizes the tree for n leaves, all out of service.
func (t *fillTree) reset(n int) {
	size := 1
	for size < n {
		size *= 2
	}
	t.size = size
	t.v = make([]fillNode, 2*size)
	for p := range t.v {
		t.v[p] = noFill
	}
}

// set updates leaf i and the path to the root.
func (t *fillTree) set(i int, leaf fillNode) {
	p := t.size + i
	t.v[p] = leaf
	for p > 1 {
		p /= 2
		l, r := &t.v[2*p], &t.v[2*p+1]
		v := &t.v[p]
		for k := range v.g {
			v.g[k] = min(l.g[k], r.g[k])
		}
		v.inv, v.head, v.room = min(l.inv, r.inv), max(l.head, r.head), max(l.room, r.room)
	}
}

// fillSearch is one search of the tree: the eligible node that does not
// hold or fill the request's title minimising c + x/E.
type fillSearch struct {
	t     *fillTree
	s     *Scheduler
	r     *Request
	x     float64 // the request's bit/s
	k     int     // fillSamples[k-1] <= x < fillSamples[k]; len(fillSamples) past the last
	w     float64 // the weight of sample k in the chord, (x - s[k-1]) / (s[k] - s[k-1])
	best  int
	bestC float64
}

func newFillSearch(s *Scheduler, r *Request) fillSearch {
	f := fillSearch{t: &s.fills, s: s, r: r, x: float64(r.Bitrate), best: -1}
	f.k = len(fillSamples)
	for k := 1; k < len(fillSamples); k++ {
		if f.x < fillSamples[k] {
			f.k, f.w = k, (f.x-fillSamples[k-1])/(fillSamples[k]-fillSamples[k-1])
			break
		}
	}
	return f
}

// bound returns a lower bound on the cost of a fill below tree node p,
// exact at a leaf, or +Inf when no node below it can take the request.
func (f *fillSearch) bound(p int) float64 {
	v := &f.t.v[p]
	if v.head < f.r.Bitrate || (f.r.Bytes > 0 && v.room < f.r.Bytes) {
		return math.Inf(1)
	}
	if p >= f.t.size {
		return v.g[0] + f.x*v.inv
	}
	if f.k == len(fillSamples) {
		last := len(fillSamples) - 1
		return v.g[last] + (f.x-fillSamples[last])*v.inv
	}
	return v.g[f.k-1] + f.w*(v.g[f.k]-v.g[f.k-1])
}

func (f *fillSearch) visit(p int, lb float64) {
	if math.IsInf(lb, 1) || (f.best >= 0 && lb >= f.bestC) {
		return
	}
	if p >= f.t.size {
		// Eligible decides what the bounds cannot (slow start); a holder
		// of the title is not a fill.
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
