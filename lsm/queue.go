package lsm

import "time"

// Ticket is a request waiting in the first-come-first-served queue.
// Exactly one of Res and Err is meaningful once Done is true.
type Ticket struct {
	Req      Request
	Deadline time.Time   // refused with ErrDeadline when not placed by then
	Done     bool        // placed or refused
	Res      Reservation // the placement, when Err is nil
	Err      error       // ErrDeadline, or the cancel reason
	Enqueued time.Time
}

type queue struct {
	items []*Ticket
}

// Queued returns the number of waiting requests.
func (s *Scheduler) Queued() int { return len(s.queue.items) }

// Admit places r now when a node fits; otherwise it queues r until
// deadline and returns its ticket, not Done. Admit does not look at the
// queue: requests are served in arrival order when the caller calls Pump
// before each Admit (the waiting ones are placed first on the capacity
// freed since), so that a new request overtakes one that waits only when
// the waiting one cannot be placed now and the new one can (no node stays
// idle behind a large request). Errors other than
// ErrNoCapacity and ErrNoNode (a malformed request) are returned at once.
func (s *Scheduler) Admit(r Request, deadline, now time.Time) (*Ticket, error) {
	t := &Ticket{Req: r, Deadline: deadline, Enqueued: now}
	res, err := s.Place(&t.Req, now)
	switch {
	case err == nil:
		t.Done, t.Res = true, res
		return t, nil
	case err == ErrNoCapacity || err == ErrNoNode:
		if !now.Before(deadline) {
			t.Done, t.Err = true, ErrDeadline
			return t, nil
		}
		s.queue.items = append(s.queue.items, t)
		return t, nil
	default:
		return nil, err
	}
}

// Pump retries the waiting requests in arrival order, places those that
// fit now and refuses those past their deadline. It returns the tickets it
// finished (Done set). Call it when capacity may have freed (a release, a
// heartbeat, a node joining) and at the earliest deadline (NextDeadline).
func (s *Scheduler) Pump(now time.Time) []*Ticket {
	if len(s.queue.items) == 0 {
		return nil
	}
	var done []*Ticket
	kept := s.queue.items[:0]
	for _, t := range s.queue.items {
		res, err := s.Place(&t.Req, now)
		switch {
		case err == nil:
			t.Done, t.Res = true, res
			done = append(done, t)
		case !now.Before(t.Deadline):
			t.Done, t.Err = true, ErrDeadline
			done = append(done, t)
		default:
			kept = append(kept, t)
		}
	}
	for i := len(kept); i < len(s.queue.items); i++ {
		s.queue.items[i] = nil
	}
	s.queue.items = kept
	return done
}

// SetOriginDown sets Request.OriginDown to down on every waiting
// request: the origin became unavailable (only nodes whose reports show
// the title may take them: a fill placed now could not start) or
// available again (a fill may start: a request admitted while it was down
// is no longer kept to the holders it had then). The caller pumps the
// queue after a change to available.
func (s *Scheduler) SetOriginDown(down bool) {
	for _, t := range s.queue.items {
		t.Req.OriginDown = down
	}
}

// NextDeadline returns the earliest deadline among waiting requests; ok is
// false when none waits.
func (s *Scheduler) NextDeadline() (d time.Time, ok bool) {
	for _, t := range s.queue.items {
		if !ok || t.Deadline.Before(d) {
			d, ok = t.Deadline, true
		}
	}
	return d, ok
}

// Cancel removes a waiting ticket (its client went away). It reports
// whether the ticket was still waiting.
func (s *Scheduler) Cancel(t *Ticket, err error) bool {
	for i, q := range s.queue.items {
		if q == t {
			copy(s.queue.items[i:], s.queue.items[i+1:])
			s.queue.items[len(s.queue.items)-1] = nil
			s.queue.items = s.queue.items[:len(s.queue.items)-1]
			t.Done, t.Err = true, err
			return true
		}
	}
	return false
}

// Counts reports whether NeedsOperator takes node n into account for r:
// n offers r.Requires, stands in r's site when r is kept to it
// (r.SiteOnly), and is alive or dead since deadBefore or later.
func Counts(n *Node, r *Request, deadBefore time.Time) bool {
	if r.Requires&^n.Features != 0 || (r.SiteOnly && r.Site != "" && n.Site != r.Site) {
		return false
	}
	return n.Alive || !n.LastHeartbeat.Before(deadBefore)
}

// NeedsOperator reports whether no node could take r unless an operator
// acts, so that r is refused at once instead of waiting in the queue
// until its deadline: every node that could serve r (it offers
// r.Requires and, with r.SiteOnly and r.Site, stands in that site) and
// may still come back by itself is drained or at weight 0 (or negative),
// and there is at least one such node. Nodes taken into account are those
// alive (unreachable ones included: their heartbeats may resume) and those
// dead whose last heartbeat is at or after deadBefore (the caller's grace
// for a dead node's return); a node dead since before deadBefore is left
// out. A node in service keeps it false whatever its load (full,
// overloaded or slow-starting: capacity frees as sessions end), as does a
// cluster with no node to take into account (none registered yet, as
// right after a manager starts, or every one long dead).
func (s *Scheduler) NeedsOperator(r *Request, deadBefore time.Time) bool {
	held := false
	for _, n := range s.Nodes {
		if !Counts(n, r, deadBefore) {
			continue
		}
		if !n.Draining && n.Weight > 0 {
			return false
		}
		held = true
	}
	return held
}

// RefuseNeedingOperator finishes with err the waiting tickets whose
// request NeedsOperator(deadBefore) (an operator drained the last node
// that could take them while they waited) and returns them. NeedsOperator
// depends only on a request's required features and kept-to site, so it
// runs once for each such pair among the waiting: O(queued + pairs ×
// nodes), not O(queued × nodes) (BenchmarkRefuseNeedingOperator).
func (s *Scheduler) RefuseNeedingOperator(deadBefore time.Time, err error) []*Ticket {
	type key struct {
		requires Feature
		site     string // the site a SiteOnly request is kept to; "" = none
	}
	memo := map[key]bool{}
	return s.refuseWhere(err, func(r *Request) bool {
		k := key{requires: r.Requires}
		if r.SiteOnly {
			k.site = r.Site
		}
		need, ok := memo[k]
		if !ok {
			need = s.NeedsOperator(r, deadBefore)
			memo[k] = need
		}
		return need
	})
}

// refuseWhere finishes with err the waiting tickets whose request refuse
// reports true for, keeps the others in their order, and returns the
// finished ones.
func (s *Scheduler) refuseWhere(err error, refuse func(*Request) bool) []*Ticket {
	var done []*Ticket
	kept := s.queue.items[:0]
	for _, t := range s.queue.items {
		if refuse(&t.Req) {
			t.Done, t.Err = true, err
			done = append(done, t)
			continue
		}
		kept = append(kept, t)
	}
	for i := len(kept); i < len(s.queue.items); i++ {
		s.queue.items[i] = nil
	}
	s.queue.items = kept
	return done
}
