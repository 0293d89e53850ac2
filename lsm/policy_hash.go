package lsm

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
// of two) over the registered nodes of site (all when ""), that offer
// requires. Its base assigns the buckets to those nodes in proportion to
// weight (scale, or equally when weighted is false), interleaved by
// smooth weighted round robin, whatever their state: it changes when a
// node joins or is removed, or (weighted) changes weight, as the kernel's
// table does. A bucket whose node is out of service (dead, cut off,
// drained, at weight 0) takes the node of the first bucket in service
// along its own probe sequence (an odd stride from the bucket's hash), so
// that a node leaving service moves only its own buckets, spread over the
// others, and takes them back when it returns: rebuilt over the nodes in
// service, a drain or a heartbeat stream's break remapped ~96% of the
// titles of the other nodes of 20 (each a new fill for dh). It returns
// nil when no such node is in service.
func buildBuckets(s *Scheduler, size int, weighted bool, site string, requires Feature) []int32 {
	var ids []int
	var ws []float64
	total := 0.0
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
	}
	inService := false
	for _, i := range ids {
		inService = inService || s.InService(s.Nodes[i])
	}
	if !inService {
		return nil
	}
	credit := make([]float64, len(ids))
	base := make([]int32, size)
	for b := range base {
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
	out := make([]int32, size)
	for b, i := range base {
		out[b] = i
		if s.InService(s.Nodes[i]) {
			continue
		}
		stride := 2*(mix64(uint64(b))%uint64(size/2)) + 1 // odd: the sequence visits every bucket
		for k := 1; k < size; k++ {
			if j := base[(uint64(b)+uint64(k)*stride)%uint64(size)]; s.InService(s.Nodes[j]) {
				out[b] = j
				break
			}
		}
	}
	return out
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
	sites   map[string][]int32 // per site and required features, built at their first request since version
}

var _ Policy = (*DestinationHashing)(nil)

// Name returns "dh".
func (*DestinationHashing) Name() string { return "dh" }

// Pick implements Policy.
func (p *DestinationHashing) Pick(s *Scheduler, r *Request) int {
	if p.buckets == nil || p.version != s.Version() {
		p.buckets, p.version = buildBuckets(s, bucketCount(len(s.Nodes)), false, "", 0), s.Version()
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
			buckets = buildBuckets(s, bucketCount(len(s.Nodes)), false, r.restrict, r.Requires)
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
}

var _ Policy = (*SourceHashing)(nil)

// Name returns "sh".
func (*SourceHashing) Name() string { return "sh" }

// Pick implements Policy.
func (p *SourceHashing) Pick(s *Scheduler, r *Request) int {
	if p.buckets == nil || p.version != s.Version() {
		p.buckets, p.version = buildBuckets(s, bucketCount(len(s.Nodes)), true, "", 0), s.Version()
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
