package lsm

func init() {
	Register("mh", func(Config) Policy { return &MaglevHashing{} })
}

// maglevSizes are the kernel's table sizes (primes); the table takes the
// smallest that gives each node at least 64 entries, from 4093 (the
// kernel's default) up to 131071.
var maglevSizes = []int{4093, 8191, 16381, 32749, 65521, 131071}

// MaglevHashing ("mh", Linux IPVS ip_vs_mh with the mh-fallback flag)
// sends a subscriber to the node of its hash in a Maglev lookup table
// (Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load
// Balancer", NSDI 2016): each node in service fills table slots in the
// order of its own permutation (offset, skip from two hashes of its id),
// taking turns in proportion to its weight (capacity times Weight/100),
// so that a node joining or leaving moves few keys. When the node is not
// eligible it rehashes as sh does.
type MaglevHashing struct {
	version uint64
	table   []int32
}

var _ Policy = (*MaglevHashing)(nil)

// Name returns "mh".
func (*MaglevHashing) Name() string { return "mh" }

// Pick implements Policy.
func (p *MaglevHashing) Pick(s *Scheduler, r *Request) int {
	if p.table == nil || p.version != s.Version() {
		p.table, p.version = buildMaglev(s), s.Version()
	}
	return lookupFallback(s, r, p.table, r.ClientHash())
}

func buildMaglev(s *Scheduler) []int32 {
	type member struct {
		node         int
		offset, skip uint64
		next         uint64
		w, credit    float64
	}
	var ms []member
	wmax := 0.0
	for i, n := range s.Nodes {
		if !s.InService(n) {
			continue
		}
		w := scale(n)
		wmax = max(wmax, w)
		// A turn to start with: every node in service gets at least one
		// slot whatever its share (as the kernel's ip_vs_mh gives each
		// destination of positive weight at least one turn per round);
		// one 65535 times the others' weight took them all.
		ms = append(ms, member{node: i, w: w, credit: 1})
	}
	if len(ms) == 0 {
		return []int32{}
	}
	m := maglevSizes[len(maglevSizes)-1]
	for _, sz := range maglevSizes {
		if sz >= 64*len(ms) {
			m = sz
			break
		}
	}
	M := uint64(m)
	for k := range ms {
		id := s.Nodes[ms[k].node].ID
		ms[k].offset = hash64(id) % M
		ms[k].skip = hash64(id+"\x00skip")%(M-1) + 1
	}
	table := make([]int32, m)
	for i := range table {
		table[i] = -1
	}
	filled := 0
	for filled < m {
		for k := range ms {
			mb := &ms[k]
			mb.credit += mb.w / wmax
			for mb.credit >= 1 && filled < m {
				mb.credit--
				for {
					slot := (mb.offset + mb.next*mb.skip) % M
					mb.next++
					if table[slot] < 0 {
						table[slot] = int32(mb.node)
						filled++
						break
					}
				}
			}
		}
	}
	return table
}
