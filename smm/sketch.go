package smm

// cmSketch is a count-min sketch with 4 rows of saturating 4-bit counters
// (stored in bytes) and TinyLFU's reset: after sample additions every
// counter is halved.
type cmSketch struct {
	rows   [4][]uint8
	mask   uint64
	adds   int
	sample int
}

func newCMSketch(width int) cmSketch {
	w := 1
	for w < width {
		w <<= 1
	}
	var s cmSketch
	for i := range s.rows {
		s.rows[i] = make([]uint8, w)
	}
	s.mask = uint64(w - 1)
	s.sample = 10 * w
	return s
}

// width is the number of counters in a row.
func (s *cmSketch) width() int { return len(s.rows[0]) }

// grown returns a sketch at least width wide (a power of two) holding the
// estimates of keys (the titles still held: a count-min sketch cannot
// give back the keys of its counters, so the others' counts are lost),
// with s's additions since its last reset.
func (s *cmSketch) grown(width int, keys func(yield func(string) bool)) cmSketch {
	n := newCMSketch(width)
	for k := range keys {
		e := s.estimate(k)
		h := hashString(k)
		for i := range n.rows {
			if c := &n.rows[i][n.index(h, i)]; *c < e {
				*c = e
			}
		}
	}
	n.adds = s.adds
	return n
}

func (s *cmSketch) index(h uint64, i int) uint64 {
	h1, h2 := h&0xffffffff, (h>>32)|1
	return (h1 + uint64(i)*h2) & s.mask
}

func (s *cmSketch) add(key string) {
	h := hashString(key)
	for i := range s.rows {
		if c := &s.rows[i][s.index(h, i)]; *c < 15 {
			*c++
		}
	}
	if s.adds++; s.adds >= s.sample {
		for i := range s.rows {
			for j := range s.rows[i] {
				s.rows[i][j] >>= 1
			}
		}
		s.adds /= 2
	}
}

func (s *cmSketch) estimate(key string) uint8 {
	h := hashString(key)
	m := uint8(15)
	for i := range s.rows {
		m = min(m, s.rows[i][s.index(h, i)])
	}
	return m
}

// hashString is 64-bit FNV-1a followed by a murmur3 finaliser, so both
// halves are well mixed for the sketch's double hashing.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93e5a8b5ee3
	h ^= h >> 33
	return h
}
