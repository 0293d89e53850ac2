package lsm

import (
	"slices"
	"time"
)

// NoSource reports whether r's title can reach no node r could use
// unless an operator acts: among the nodes that could serve r and may
// still come back by themselves (Counts: they offer r.Requires, stand in
// r's site when r is kept to it, and are alive or dead since deadBefore
// or later), none that has an origin is in the operator's service (each
// is drained or at weight 0, as for NeedsOperator), none without an
// origin (NodeSpec.NoOrigin) holds the title complete, and at least one
// has no origin. Such a request is refused at once: waiting in the queue
// brings no node that could fill the title, and the nodes without an
// origin never get it. A node with an origin neither drained nor at
// weight 0 (even full, dead within the grace or unreachable) keeps it
// false: the request may wait for it; so does a cluster with no node to
// take into account. O(nodes).
func (s *Scheduler) NoSource(r *Request, deadBefore time.Time) bool {
	counted := false
	for _, n := range s.Nodes {
		if !Counts(n, r, deadBefore) {
			continue
		}
		if !n.NoOrigin {
			if !n.Draining && n.Weight > 0 {
				return false
			}
			continue
		}
		if c := n.titles[r.Title]; c != nil && !c.filling {
			return false
		}
		counted = true
	}
	return counted
}

// RefuseNoSource finishes with err the waiting tickets whose request
// NoSource(deadBefore) (the last node with an origin that could take them
// was drained, set to weight 0 or dead since before deadBefore while they
// waited, or they were queued before the caller took the nodes as
// settled) and returns them. Without a node lacking an origin it returns
// at once (NoSource cannot hold); else NoSource runs once per title,
// required features and kept-to site among the waiting: O(queued +
// distinct requests × nodes).
func (s *Scheduler) RefuseNoSource(deadBefore time.Time, err error) []*Ticket {
	if len(s.queue.items) == 0 || !slices.ContainsFunc(s.Nodes, func(n *Node) bool { return n.NoOrigin }) {
		return nil
	}
	type key struct {
		title    string
		requires Feature
		site     string // the site a SiteOnly request is kept to; "" = none
	}
	memo := map[key]bool{}
	return s.refuseWhere(err, func(r *Request) bool {
		k := key{title: r.Title, requires: r.Requires}
		if r.SiteOnly {
			k.site = r.Site
		}
		no, ok := memo[k]
		if !ok {
			no = s.NoSource(r, deadBefore)
			memo[k] = no
		}
		return no
	})
}

// FillersInServiceFor returns how many nodes in service could take r
// with a fill of its title: they have an origin (NodeSpec.NoOrigin
// false), offer r.Requires and, when r is kept to its site (r.SiteOnly
// with r.Site set), stand in that site. Load and disk room are not looked
// at. With HoldersInServiceFor at 0 too, no node in service can ever take
// r as things stand.
func (s *Scheduler) FillersInServiceFor(r *Request) int {
	k := 0
	for _, n := range s.Nodes {
		if n.NoOrigin || r.Requires&^n.Features != 0 || (r.SiteOnly && r.Site != "" && n.Site != r.Site) {
			continue
		}
		if s.InService(n) {
			k++
		}
	}
	return k
}
