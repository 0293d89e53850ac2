package lsm

import "math"

func init() {
	Register("dh", func(Config) Policy { return &DestinationHashing{} })
	Register("sh", func(Config) Policy { return &SourceHashing{} })
}

// bucketCount returns the size of a dh/sh bucket table for n nodes: the
// kernel's 256, or more so that each node gets about 16 buckets.
func bucketCount(n int) int {
	size := 256
	for size < 16*n {
		size *= 2
	}
	return size
}

// buildBuckets returns the dh/sh bucket table of size buckets (a power
// of two, at least 16 per node: bucketCount) over the registered nodes of
// site (all when ""), that offer requires. Its base gives each of those
// nodes one bucket, then assigns the rest in proportion to weight
// (scale, or equally when weighted is false), interleaved by smooth
// weighted round robin, whatever their state: it changes when a node
// joins or is removed, or (weighted) changes weight, as the kernel's
// table does (weighted, a weight set to 0 too). A bucket whose node is
// out of service (dead, cut off, drained, or at weight 0 when not
// weighted) takes the node of the first bucket in service
// along its own probe sequence (an odd stride from the bucket's hash), so
// that a node leaving service moves only its own buckets, spread over the
// others, and takes them back when it returns: rebuilt over the nodes in
// service, a drain or a heartbeat stream's break remapped ~96% of the
// titles of the other nodes of 20 (each a new fill for dh). cache, when
// not nil, keeps the base between calls. It returns nil when no such
// node is in service.
func buildBuckets(s *Scheduler, size int, weighted bool, site string, requires Feature, cache *bucketBase) []int32 {
	var ids []int
	var ws []float64
	total := 0.0
	inService := false
	fp := mix64(uint64(size))
	for i, n := range s.Nodes {
		if (site != "" && n.Site != site) || requires&^n.Features != 0 {
			continue
		}
		w := 1.0
		if weighted {
			w = scale(n)
		}
		ids, ws = append(ids, i), append(ws, w)
		total += w
		inService = inService || s.InService(n)
		fp = mix64(fp ^ hash64(n.ID) ^ uint64(i)<<1 ^ math.Float64bits(w))
	}
	if !inService {
		return nil
	}
	var base []int32
	if cache != nil && cache.fp == fp && len(cache.base) == size {
		base = cache.base // the same nodes and weights: only their states changed
	} else {
		base = make([]int32, size)
		// One bucket each first (a node far lighter than the others got
		// none, and with the heavy ones out of service every bucket was
		// lent to a node out of service too), then the rest by weight.
		for k, i := range ids {
			base[k] = int32(i)
		}
		credit := make([]float64, len(ids))
		for b := len(ids); b < size; b++ {
			best := 0
			for k := range ids {
				credit[k] += ws[k]
				if credit[k] > credit[best] {
					best = k
				}
			}
			credit[best] -= total
			base[b] = int32(ids[best])
		}
		if cache != nil {
			cache.fp, cache.base = fp, base
		}
	}
	up := make([]bool, size)
	for b, i := range base {
		up[b] = s.InService(s.Nodes[i])
	}
	out := make([]int32, size)
	mask := uint64(size - 1)
	for b, i := range base {
		out[b] = i
		if up[b] {
			continue
		}
		stride := 2*(mix64(uint64(b))%uint64(size/2)) + 1 // odd: the sequence visits every bucket
		for k, at := 1, uint64(b); k < size; k++ {
			if at = (at + stride) & mask; up[at] {
				out[b] = base[at]
				break
			}
		}
	}
	return out
}

// bucketBase keeps a bucket table's base (buildBuckets) with the
// fingerprint of the nodes and weights it was built on: a change of the
// nodes' states only (a drain, a death, a heartbeat stream's break) lends
// buckets anew without building the base again (O(buckets × nodes): 12 ms
// at 1,000 nodes).
type bucketBase struct {
	fp   uint64
	base []int32
}

// DestinationHashing ("dh", Linux IPVS ip_vs_dh) sends a title always to
// the node its hash selects in a bucket table over the registered nodes
// (weights ignored, as in the kernel); when that node is not eligible the
// session is refused, as the kernel refuses. The table's base changes
// when a node joins or is removed, as the kernel's does; a node out of
// service (dead, cut off, drained, at weight 0) has its buckets lent to
// the others, each to its own, until it returns (buildBuckets): its
// titles move, no other's. While
// Place keeps to a site (Request.Site) the table is one over that site's
// nodes: a title has its one node in each site; likewise over the nodes
// that offer what a request requires (Request.Requires). A title that
// hashes to a node without an origin that lacks it (NodeSpec.NoOrigin)
// takes the next node in the fallback order that can serve it
// (nextCanServe), so that it is not refused for ever.
type DestinationHashing struct {
	version uint64
	buckets []int32
	sites   map[string][]int32     // per site and required features, built at their first request since version
	bases   map[string]*bucketBase // the bases of buckets ("") and of sites', by the same key
}

// base returns p's bucketBase for key, made when new.
func (p *DestinationHashing) base(key string) *bucketBase {
	if p.bases == nil {
		p.bases = map[string]*bucketBase{}
	}
	b := p.bases[key]
	if b == nil {
		b = &bucketBase{}
		p.bases[key] = b
	}
	return b
}

var _ Policy = (*DestinationHashing)(nil)

// Name returns "dh".
func (*DestinationHashing) Name() string { return "dh" }

// Pick implements Policy.
func (p *DestinationHashing) Pick(s *Scheduler, r *Request) int {
	if p.buckets == nil || p.version != s.Version() {
		p.buckets, p.version = buildBuckets(s, bucketCount(len(s.Nodes)), false, "", 0, p.base("")), s.Version()
		clear(p.sites)
	}
	buckets := p.buckets
	if r.restrict != "" || r.Requires != 0 {
		key := r.restrict + "\x00" + string(rune(r.Requires))
		var ok bool
		if buckets, ok = p.sites[key]; !ok {
			if p.sites == nil {
				p.sites = map[string][]int32{}
			}
			buckets = buildBuckets(s, bucketCount(len(s.Nodes)), false, r.restrict, r.Requires, p.base(key))
			p.sites[key] = buckets
		}
	}
	if len(buckets) == 0 {
		return -1
	}
	h := r.TitleHash()
	i := int(buckets[h%uint64(len(buckets))])
	if !canServe(s.Nodes[i], r.Title) {
		i = nextCanServe(s, r, buckets, h)
	}
	if i < 0 || !s.Eligible(i, r) {
		return -1
	}
	return i
}

// canServe reports whether node n could ever take a viewer of title as
// things stand: it has an origin, or holds the title complete
// (NodeSpec.NoOrigin).
func canServe(n *Node, title string) bool {
	if !n.NoOrigin {
		return true
	}
	c := n.titles[title]
	return c != nil && !c.filling
}

// nextCanServe is dh's choice when the node r's title hashes to has no
// origin and lacks the title (it would refuse every viewer of it for as
// long as it stays in the table): the first node that canServe in the
// probe order of lookupFallback (table[mix(h+k) mod len], k = 1, 2, ...,
// then the nodes in index order that the table is over: in service, in
// r's site while Place keeps to it, offering r.Requires), whatever its
// load, so that the title still has one node; -1 when none.
func nextCanServe(s *Scheduler, r *Request, table []int32, h uint64) int {
	m := uint64(len(table))
	probes := min(m, uint64(2*len(s.Nodes)+8))
	for k := uint64(1); k <= probes; k++ {
		if i := int(table[mix64(h+k)%m]); canServe(s.Nodes[i], r.Title) {
			return i
		}
	}
	first := int(table[h%m])
	for k := 1; k < len(s.Nodes); k++ {
		i := (first + k) % len(s.Nodes)
		if n := s.Nodes[i]; s.InService(n) && r.inScope(n) && r.Requires&^n.Features == 0 && canServe(n, r.Title) {
			return i
		}
	}
	return -1
}

// SourceHashing ("sh", Linux IPVS ip_vs_sh with the sh-fallback flag)
// sends a subscriber always to the node its hash selects in a bucket table
// where each registered node has buckets in proportion to its weight
// (capacity times Weight/100), those of a node out of service lent to the
// others (buildBuckets); when that node is not eligible it rehashes
// with offsets 1, 2, ... as the kernel's fallback does.
type SourceHashing struct {
	version uint64
	buckets []int32
	base    bucketBase
}

var _ Policy = (*SourceHashing)(nil)

// Name returns "sh".
func (*SourceHashing) Name() string { return "sh" }

// Pick implements Policy.
func (p *SourceHashing) Pick(s *Scheduler, r *Request) int {
	if p.buckets == nil || p.version != s.Version() {
		p.buckets, p.version = buildBuckets(s, bucketCount(len(s.Nodes)), true, "", 0, &p.base), s.Version()
	}
	return lookupFallback(s, r, p.buckets, r.ClientHash())
}

// lookupFallback returns table[h mod len] when that node is eligible;
// else, as the kernel's fallback, the first eligible node of
// table[mix(h+k) mod len] for k = 1, 2, ... (at most 2*nodes+8 probes),
// and after those the first eligible node after the hashed one in index
// order, so a full cluster costs O(nodes). -1 when none.
func lookupFallback(s *Scheduler, r *Request, table []int32, h uint64) int {
	m := uint64(len(table))
	if m == 0 {
		return -1
	}
	first := int(table[h%m])
	if s.Eligible(first, r) {
		return first
	}
	probes := min(m, uint64(2*len(s.Nodes)+8))
	for k := uint64(1); k <= probes; k++ {
		if i := int(table[mix64(h+k)%m]); s.Eligible(i, r) {
			return i
		}
	}
	for k := 1; k < len(s.Nodes); k++ {
		if i := (first + k) % len(s.Nodes); s.Eligible(i, r) {
			return i
		}
	}
	return -1
}
