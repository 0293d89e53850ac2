package lsm

import "time"

// AnyNodeReporting reports whether the scheduler knows a node that may
// take requests now or come back by itself: one alive (unreachable ones
// included) or dead whose last heartbeat is at or after deadBefore (the
// caller's grace for a dead node's return), whatever it offers, its site
// or the operator's setting. Without one (none registered, or every one
// dead since before deadBefore) no request is placed until a node
// registers. O(nodes).
func (s *Scheduler) AnyNodeReporting(deadBefore time.Time) bool {
	for _, n := range s.Nodes {
		if n.Alive || !n.LastHeartbeat.Before(deadBefore) {
			return true
		}
	}
	return false
}

// RefuseAll finishes with err every waiting ticket and returns them, in
// queue order (the caller found that none can be placed, as when
// AnyNodeReporting is false). O(queued).
func (s *Scheduler) RefuseAll(err error) []*Ticket {
	return s.refuseWhere(err, func(*Request) bool { return true })
}
