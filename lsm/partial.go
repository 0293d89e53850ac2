package lsm

import (
	"fmt"
	"slices"
)

// A partial is the beginning of a title kept on a node's disk after its
// fill stopped short (the origin away, the fill abandoned, the node
// stopping): the node's next fill of the title resumes from it and asks
// the origin only for the bytes missing. A partial is not a copy: the node
// does not serve it, so it is no replica (Holds, Holders) and no node is
// eligible for a session because of it. The default policy (lall) charges
// a fill on a node with a partial of the title only for the share of the
// title missing there (LocalityLeastLoad), so the next viewer of a title
// cut short goes back to the node that has its beginning when the load
// formula allows it.

// Partial is one partly filled title kept on a node to resume its fill
// from, as the node reports it (Report.Partials).
type Partial struct {
	Title string
	Bytes int64 // bytes on the node's disk
	Size  int64 // bytes of the whole title; > 0
}

// missingShare returns the share of the title p lacks, in [0, 1].
func (p Partial) missingShare() float64 {
	if p.Size <= 0 {
		return 1
	}
	return min(1, max(0, float64(p.Size-p.Bytes)/float64(p.Size)))
}

// Partial returns the partial of title node id reported last, and whether
// there is one.
func (s *Scheduler) Partial(id, title string) (Partial, bool) {
	n := s.byID[id]
	if n == nil {
		return Partial{}, false
	}
	p, ok := n.partials[title]
	return p, ok
}

// setPartials replaces n's partials with ps; entries without a title, a
// size or any byte, or with more bytes than the size, are skipped.
func (s *Scheduler) setPartials(n *Node, ps []Partial) {
	if len(n.partials) == 0 && len(ps) == 0 {
		return
	}
	n.viewEpoch++
	for t := range n.partials {
		s.unindexPartial(n, t)
	}
	clear(n.partials)
	for _, p := range ps {
		if p.Title == "" || p.Size <= 0 || p.Bytes <= 0 || p.Bytes > p.Size {
			continue
		}
		if n.partials == nil {
			n.partials = map[string]Partial{}
		}
		if _, dup := n.partials[p.Title]; !dup {
			if s.partialAt == nil {
				s.partialAt = map[string][]*Node{}
			}
			s.partialAt[p.Title] = append(s.partialAt[p.Title], n)
		}
		n.partials[p.Title] = p
	}
}

// unindexPartial removes n from the nodes with a partial of title.
func (s *Scheduler) unindexPartial(n *Node, title string) {
	unindex(s.partialAt, title, n)
}

// unindex removes one v from idx[key], the last element taking its place
// (the order is not kept), and the key when nothing is left under it.
func unindex[K, V comparable](idx map[K][]V, key K, v V) {
	vs := idx[key]
	if k := slices.Index(vs, v); k >= 0 {
		vs[k] = vs[len(vs)-1]
		vs = vs[:len(vs)-1]
	}
	if len(vs) == 0 {
		delete(idx, key)
	} else {
		idx[key] = vs
	}
}

// cheapestPartial returns, among the eligible nodes with a partial of r's
// title that neither hold nor fill it, the one where r's session costs
// least by the default policy's measure with the fill charge cut to the
// share of the title missing there, and that cost (charge included); -1
// when there is none. O(nodes with a partial of the title).
func (s *Scheduler) cheapestPartial(r *Request) (int, float64) {
	ns := s.partialAt[r.Title]
	if len(ns) == 0 {
		return -1, 0
	}
	best, bestC := -1, 0.0
	charge := s.fillCharge()
	for _, n := range ns {
		if _, held := n.titles[r.Title]; held || !s.Eligible(n.Index, r) {
			continue
		}
		c := s.loadWith(n.Index, 1) + s.diskTerm(n) + float64(r.Bitrate)/weightedBps(n) + charge*n.partials[r.Title].missingShare()
		if best < 0 || c < bestC {
			best, bestC = n.Index, c
		}
	}
	return best, bestC
}

// DropPartial forgets node id's partial of title (its removal was
// ordered) until a report lists it again. ErrUnknownNode for an unknown
// node; no partial is no error.
func (s *Scheduler) DropPartial(id, title string) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if _, ok := n.partials[title]; ok {
		n.viewEpoch++
		delete(n.partials, title)
		s.unindexPartial(n, title)
	}
	return nil
}
