package acm

import (
	"fmt"
	"maps"
	"slices"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// lostPrefetchesLocked deals, at ns's registration req (a new heartbeat
// stream), with the prefetches ordered to the node and shown by no report
// since (ns.pending: the operator's, the planner's, a pin's) that the
// registration does not list either, whole or filling (mu held; before
// syncTitlesLocked, which it returns the failures for):
//   - one whose command still waits in the node's queue goes down the new
//     stream as it is;
//   - one past its order timeout (the node was away longer) is left to
//     the sync, which fails it as not started, as the node's next report
//     would have: retried after its backoff only if still wanted (a copy
//     of its command still queued is then taken out: dropFailedPrefetchCmdsLocked);
//   - one of which the registration lists a partial holding more bytes
//     than the node's last report before the order did (written since:
//     compared by bytes, not by the partial's stop time on the node's
//     clock against the order's on the manager's, which skew misjudges)
//     was started by the node and stopped with it (a node restarted):
//     failed now, retried after the Replicator's backoff from the
//     partial, instead of at the order timeout as "not started";
//   - one of a title the node can no longer stream (it registered again
//     with an egress_bps below the title's bitrate: canStream), queued or
//     lost, is failed now, its queued command dropped with it
//     (dropFailedPrefetchCmdsLocked): the copy would play to no viewer
//     there (an operator's is then dropped by the next plan, a planner's
//     is not planned there again);
//   - any other was lost with the old stream (sent down it as it broke,
//     or taken by a node process that stopped before starting it): sent
//     again now, its order timeout starting over, instead of failing at
//     that timeout and waiting for a retry. A node given it twice joins
//     the fill it has (vodnode's store), so a copy of the command still on
//     its way down the old stream does no harm; a copy the old stream's
//     sender had taken and could not send is not put back
//     (dropResentPrefetchCmdsLocked).
func (m *Manager) lostPrefetchesLocked(ns *nodeState, req *pb.RegisterRequest, now time.Time) []*pb.FillFailure {
	if len(ns.pending) == 0 {
		return nil
	}
	listed := map[string]bool{}
	for _, t := range req.GetTitles() {
		listed[t.GetTitleId()] = true
	}
	held := maps.Clone(listed) // whole or filling on the node
	for _, c := range ns.queue {
		if p := c.GetPrefetch(); p != nil {
			listed[p.GetTitleId()] = true // queued: the new stream takes it
		}
	}
	partials := map[string]*pb.PartialTitle{}
	for _, p := range req.GetPartials() {
		partials[p.GetTitleId()] = p
	}
	var failed []*pb.FillFailure
	n, cat := m.sched.Node(ns.id), m.titles()
	for id, p := range ns.pending {
		if t, ok := cat[id]; ok && n != nil && !held[id] && !canStream(n, t) {
			failed = append(failed, &pb.FillFailure{TitleId: id, Prefetch: true, AtUnixMs: now.UnixMilli(),
				Reason: fmt.Sprintf("it registered again with egress_bps %.1f Mbit/s, less than the title's bitrate, %.1f Mbit/s: no viewer could play it there (not sent again)",
					float64(n.Capacity.EgressBps)/1e6, float64(t.BitrateBps)/1e6)})
			continue
		}
		if listed[id] {
			continue
		}
		if now.Sub(p.at) > m.OrderTimeout {
			continue // fails as not started (syncTitlesLocked)
		}
		if pt := partials[id]; pt != nil && pt.GetStoredBytes() > p.partial {
			failed = append(failed, &pb.FillFailure{TitleId: id, Prefetch: true, AtUnixMs: pt.GetSinceUnixMs(),
				Reason: fmt.Sprintf("its fill stopped with the node, which registered again keeping %d of %d bytes (the retry resumes from them)", pt.GetStoredBytes(), pt.GetSizeBytes())})
			continue
		}
		cmd := prefetchCmd(id)
		if !ns.push(cmd) {
			continue // queue full: it fails at the order timeout, as before
		}
		p.at, p.partial, p.cmd = now, partials[id].GetStoredBytes(), cmd
		m.log.Info("prefetch sent again: the node registered again without it (lost with its old heartbeat stream)", "node", ns.id, "title", id)
	}
	return failed
}

// dropFailedPrefetchCmdsLocked takes out of cmds, at or since ns's
// registration (after its sync), the PrefetchCommands whose order is no
// longer pending (mu held): the sync failed it (past its order timeout,
// reported failed, stopped with the node) or found the title listed,
// whole or filling. Sent, the first started a fill the manager counted
// failed, to be retried after its backoff only if still wanted; the
// second would fill nothing. Every PrefetchCommand is queued with its
// pending order (prefetchLocked, lostPrefetchesLocked,
// prefetchAfterStaleLocked). It returns what is left of cmds (edited in
// place).
func (m *Manager) dropFailedPrefetchCmdsLocked(ns *nodeState, cmds []*pb.NodeCommand) []*pb.NodeCommand {
	return slices.DeleteFunc(cmds, func(c *pb.NodeCommand) bool {
		p := c.GetPrefetch()
		if p == nil || ns.pending[p.GetTitleId()] != nil {
			return false
		}
		m.log.Info("prefetch command not sent: its order ended at the node's registration (failed, or the node lists the title)", "node", ns.id, "title", p.GetTitleId())
		return true
	})
}

// putBackAfterRegistrationLocked puts back for ns's new heartbeat stream
// the commands rest that the sender of a stream of before its latest
// registration had taken and could not send (mu held), protect and drain
// commands taken out (the registration's pins and drain state, or those
// as they are, go first: sendCommands). The prefetches whose order the registration ended are
// dropped (dropFailedPrefetchCmdsLocked), and so are those it sent again
// (dropResentPrefetchCmdsLocked); the others go back to the front of the
// queue.
func (m *Manager) putBackAfterRegistrationLocked(ns *nodeState, rest []*pb.NodeCommand) {
	rest = m.dropResentPrefetchCmdsLocked(ns, m.dropFailedPrefetchCmdsLocked(ns, slices.Clone(rest)))
	if len(rest) == 0 {
		return
	}
	ns.queue = append(rest, ns.queue...)
	ns.signal() // the new stream's sender may be waiting already
}

// dropResentPrefetchCmdsLocked takes out of cmds, commands a stream's
// sender had taken and could not send, the PrefetchCommands whose order
// was queued again since (mu held): at the node's registration, as lost
// with its old stream (lostPrefetchesLocked), or after the eviction of a
// stale copy (prefetchAfterStaleLocked). That later command is the one
// the node gets: put back too, the order reached the node twice. It
// returns what is left of cmds (edited in place).
func (m *Manager) dropResentPrefetchCmdsLocked(ns *nodeState, cmds []*pb.NodeCommand) []*pb.NodeCommand {
	return slices.DeleteFunc(cmds, func(c *pb.NodeCommand) bool {
		p := c.GetPrefetch()
		if p == nil {
			return false
		}
		o := ns.pending[p.GetTitleId()]
		if o == nil || o.cmd == nil || o.cmd == c {
			return false
		}
		m.log.Info("prefetch command not put back: its order was sent again since", "node", ns.id, "title", p.GetTitleId())
		return true
	})
}
