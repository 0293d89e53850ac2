package lsm

import "math"

// fillTree is a tournament tree over the nodes for the default policy's
// choice of a fill node. A node's cost of a new fill of a session of x
// bit/s is c + x/E: c its load and disk term (independent of the
// request), E its weighted capacity. Each tree node keeps, for the leaves
// below it:
//
//   - g(x) = min(c + x/E) at a few sample bitrates (fillSamples). g is
//     concave in x, so between two samples it lies above the chord
//     joining them, and past the last one it rises at least by the least
//     1/E: a lower bound on the cost of a fill below the tree node, exact
//     at the samples;
//   - the least c among the leaves with at least so much disk room, for a
//     few room sizes (fillRooms): a second lower bound, for a title that
//     the cheapest nodes have no room for;
//   - the most bit/s headroom, and per sample bitrate the most disk room
//     among the leaves with that much headroom.
//
// A search for the node where a request's fill costs least visits
// subtrees in the order of their bounds and prunes those that cannot take
// the request or cannot beat the best found: about 2 log n tree nodes in
// the usual case, more only when the nodes that can take the request are
// scattered among cheaper ones that cannot. Updating a node costs O(log n)
// (tree nodes of 128 bytes: two cache lines).
type fillTree struct {
	size int        // leaves, a power of two >= number of nodes
	v    []fillNode // 2*size: inner nodes at 1..size-1, leaves at size..2*size-1
}

// fillSamples are the bitrates, bit/s, at which the tree keeps g exactly:
// the usual IPTV bitrates (SD 2-4, HD 8, UHD 16 Mbit/s) fall on them or
// between two close ones.
var fillSamples = [...]float64{0, 2e6, 4e6, 8e6, 16e6}

// fillRooms are the disk rooms, bytes, for which the tree keeps the least
// cost c among the nodes with at least that much room: the cheapest nodes
// of a subtree may have no room for a title while others do.
var fillRooms = [...]int64{1 << 30, 1 << 31, 1 << 32, 1 << 33}

// fillNode is a leaf's values, or the bounds of the leaves below.
type fillNode struct {
	g [len(fillSamples)]float64 // min of c + x/E at each sample x; +Inf when no node is in service
	// c[j] is the least c among the nodes with at least fillRooms[j]
	// bytes of room, +Inf when none.
	c    [len(fillRooms)]float64
	inv  float64 // least 1/E, E the weighted capacity in bit/s
	head int64   // most bit/s headroom under the full egress capacity; -1 when none
	// room[k] is the most disk bytes not in use among the nodes with at
	// least fillSamples[k] bit/s of headroom (math.MaxInt64 when a disk
	// size is unknown, -1 when there is no such node): a subtree whose
	// nodes with headroom for a request have no room for it is pruned,
	// even when other nodes of it have room but no headroom.
	room [len(fillSamples)]int64
}

var noFill = func() fillNode {
	f := fillNode{inv: math.Inf(1), head: -1}
	for k := range f.g {
		f.g[k], f.room[k] = math.Inf(1), -1
	}
	for j := range f.c {
		f.c[j] = math.Inf(1)
	}
	return f
}()

// fillLeaf returns a leaf of cost c (before the session), capacity E,
// headroom head bit/s and room bytes of disk not in use.
func fillLeaf(c, e float64, head, room int64) fillNode {
	f := fillNode{inv: 1 / e, head: head}
	for k, x := range fillSamples {
		f.g[k] = c + x*f.inv
		f.room[k] = -1
		if float64(head) >= x {
			f.room[k] = room
		}
	}
	for j, b := range fillRooms {
		f.c[j] = math.Inf(1)
		if room >= b && head >= 0 {
			f.c[j] = c
		}
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
			v.room[k] = max(l.room[k], r.room[k])
		}
		for j := range v.c {
			v.c[j] = min(l.c[j], r.c[j])
		}
		v.inv, v.head = min(l.inv, r.inv), max(l.head, r.head)
	}
}

// fillSearch is one search of the tree: the eligible node minimising
// c + x/E, among those that do not hold or fill the request's title when
// skipHeld is set.
type fillSearch struct {
	t        *fillTree
	s        *Scheduler
	r        *Request
	skipHeld bool
	x        float64 // the request's bit/s
	k        int     // fillSamples[k-1] <= x < fillSamples[k]; len(fillSamples) past the last
	kr       int     // the last sample at or below x (headroom for room[kr])
	j        int     // the last of fillRooms at or below the request's bytes; -1 when none
	w        float64 // the weight of sample k in the chord, (x - s[k-1]) / (s[k] - s[k-1])
	best     int
	bestC    float64
}

func newFillSearch(s *Scheduler, r *Request, skipHeld bool) fillSearch {
	f := fillSearch{t: &s.fills, s: s, r: r, skipHeld: skipHeld, x: float64(r.Bitrate), best: -1}
	f.k = len(fillSamples)
	for k := 1; k < len(fillSamples); k++ {
		if f.x < fillSamples[k] {
			f.k, f.w = k, (f.x-fillSamples[k-1])/(fillSamples[k]-fillSamples[k-1])
			break
		}
	}
	f.kr = f.k - 1
	f.j = -1
	for j, b := range fillRooms {
		if r.Bytes >= b {
			f.j = j
		}
	}
	return f
}

// bound returns a lower bound on the cost of a fill below tree node p,
// exact at a leaf, or +Inf when no node below it can take the request.
func (f *fillSearch) bound(p int) float64 {
	v := &f.t.v[p]
	if v.head < f.r.Bitrate || (f.r.Bytes > 0 && v.room[f.kr] < f.r.Bytes) {
		return math.Inf(1)
	}
	if p >= f.t.size {
		return v.g[0] + f.x*v.inv
	}
	var lb float64
	if f.k == len(fillSamples) {
		last := len(fillSamples) - 1
		lb = v.g[last] + (f.x-fillSamples[last])*v.inv
	} else {
		lb = v.g[f.k-1] + f.w*(v.g[f.k]-v.g[f.k-1])
	}
	if f.j >= 0 {
		lb = max(lb, v.c[f.j]+f.x*v.inv)
	}
	return lb
}

func (f *fillSearch) visit(p int, lb float64) {
	if math.IsInf(lb, 1) || (f.best >= 0 && lb >= f.bestC) {
		return
	}
	if p >= f.t.size {
		// Eligible decides what the bounds cannot (slow start).
		i := p - f.t.size
		if f.skipHeld {
			if _, held := f.s.Nodes[i].titles[f.r.Title]; held {
				return
			}
		}
		if f.s.Eligible(i, f.r) {
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
