package lsm

import "fmt"

// RemoveNode forgets node id: the operator decommissioned it. The node
// must be dead (not Alive: its heartbeats stopped, or it left) and hold
// no reservation (its sessions released, as they are when it dies). Its
// replicas leave the replica view, its operator settings (weight, drain,
// overload threshold) go with it, and a node registering later under the
// same id (AddNode) starts as a new one.
//
// The nodes after it in Nodes move down one place, so their Index changes:
// reservations of them made before keep working (Release finds their node
// by NodeID), but a policy's tables of node indexes do not, so the policy
// is built fresh, as at SetPolicy (a stateful policy, lblc, lblcr, lard,
// lard/r, starts with empty tables; the hash policies rebuild theirs at
// once since Version moves). Errors: ErrUnknownNode; an alive node; a node
// with reservations.
func (s *Scheduler) RemoveNode(id string) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if n.Alive {
		return fmt.Errorf("lsm: node %s is alive: only a dead node can be removed", id)
	}
	if n.Sessions > 0 || n.ReservedBps > 0 {
		return fmt.Errorf("lsm: node %s has %d reservations (%d bit/s): release them first", id, n.Sessions, n.ReservedBps)
	}
	p, err := NewPolicy(s.Config.Policy, s.Config)
	if err != nil {
		return err // the policy in use was built from the same name: never
	}
	for t := range n.titles {
		s.dropReplica(n, t)
	}
	s.setPartials(n, nil)
	i := n.Index
	copy(s.Nodes[i:], s.Nodes[i+1:])
	s.Nodes[len(s.Nodes)-1] = nil
	s.Nodes = s.Nodes[:len(s.Nodes)-1]
	for _, m := range s.Nodes[i:] {
		m.Index--
	}
	for _, h := range s.holders {
		for k, j := range h {
			if int(j) > i {
				h[k] = j - 1
			}
		}
	}
	delete(s.byID, id)
	s.policy = p
	s.version++
	s.fills.reset(len(s.Nodes))
	for _, m := range s.Nodes {
		s.touch(m)
	}
	return nil
}

// nodeOf returns the node of reservation res: the one at res.Node when
// its id is res.NodeID (or res.NodeID is empty), else the node with id
// res.NodeID (RemoveNode moved it down); nil when neither.
func (s *Scheduler) nodeOf(res Reservation) *Node {
	if res.Node >= 0 && res.Node < len(s.Nodes) {
		if n := s.Nodes[res.Node]; res.NodeID == "" || n.ID == res.NodeID {
			return n
		}
	}
	if res.NodeID == "" {
		return nil
	}
	return s.byID[res.NodeID]
}
