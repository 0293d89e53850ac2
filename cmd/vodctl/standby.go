package main

import (
	"google.golang.org/protobuf/proto"

	v1 "vodcluster/proto/vodcluster/v1"
)

// notHeldWhy and notHeldDo say, in a note about a manager that does not
// hold the planner lock (its answer's standby), why that can be and what
// to do: a single manager whose store stopped answering loses the lock
// too, and is no standby with an active manager to ask (it said only
// "the standby of a pair, or taking the lock").
const (
	notHeldWhy = "(the standby of a pair, one taking the lock, or one whose store does not answer: it cannot renew the lock)"
	notHeldDo  = "ask the active manager (the pair's virtual IP), or, with no other manager, see that the store answers (the manager's log says when it does not)"
)

// standbyShows says what a standby's answer m (standby set) shows
// instead of the cluster's, for the note beside it.
func standbyShows(m proto.Message) string {
	switch m := m.(type) {
	case *v1.ListPlacementResponse:
		return "it lists only the copies and partial fills of the nodes registered with it, and the pins as it last read them"
	case *v1.NodeInfo:
		return "it shows a node registered only with the active manager as not registered, by its stored setting"
	case *v1.ListPopularityResponse:
		return "it lists the popularity it restored from the store, not the requests the active manager has seen since"
	case *v1.PolicyInfo:
		return "its storage planner does not run (the counts are its own, not the cluster's), and its policy is the one it read at its start"
	case *v1.ListNodesResponse:
		if len(m.GetNodes()) == 0 {
			return "no node has registered with it: the nodes report to the active manager, and it lists only the nodes registered with it"
		}
	}
	return "it lists only the nodes registered with it and their sessions, and plans no fill"
}
