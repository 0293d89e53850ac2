package acm

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/acm/store"
	"vodcluster/lsm"
	"vodcluster/smm"
)

// errOverEgress refuses at once a request for a title whose bitrate is
// more than the whole egress (node egress_bps) of every node the viewer
// may use, alive or not, drained or not: no node will ever have headroom
// for it, however long the request waits, until the operator gives a node
// more egress or the title a lower bitrate. It wraps errNoBandwidth (RTSP
// 453, HTTP 503; the outcome no_capacity), without Retry-After: trying
// again changes nothing. Before it, such a request waited the whole
// queue_deadline and was told "not enough bandwidth: try again later".
var errOverEgress = fmt.Errorf("%w: the title's bitrate is more than any node can stream", errNoBandwidth)

// overEgressWhyLocked reports whether r is refused at once with
// errOverEgress (mu held), and why, for the operator's log: the nodes
// settled (nodesSettledLocked: a node with more egress may not have
// registered yet right after a start), at least one node known that r
// could use (its protocol's features, its site with SiteOnly), and r's
// bitrate above the egress each of them announced.
func (m *Manager) overEgressWhyLocked(r *lsm.Request, now time.Time) (why string, over bool) {
	if r.Bitrate <= 0 || !m.nodesSettledLocked(now) {
		return "", false
	}
	var most int64
	var at []string
	for _, n := range m.sched.Nodes {
		if r.Requires&^n.Features != 0 || (r.SiteOnly && r.Site != "" && n.Site != r.Site) {
			continue
		}
		if e := n.Capacity.EgressBps; e > most {
			most, at = e, []string{n.ID}
		} else if e == most && len(at) < 8 {
			at = append(at, n.ID)
		}
	}
	if len(at) == 0 || r.Bitrate <= most {
		return "", false
	}
	which := "any node"
	if r.SiteOnly && r.Site != "" {
		which = fmt.Sprintf("any node of the viewer's site %q (site_only)", r.Site)
	}
	return fmt.Sprintf("the title's bitrate, %.1f Mbit/s, is more than %s can stream: the largest node egress_bps is %.1f Mbit/s (%s); give a node more egress_bps or publish the title at a lower bitrate",
		float64(r.Bitrate)/1e6, which, float64(most)/1e6, strings.Join(at, ", ")), true
}

// refuseOverEgressLocked refuses r of user at once when overEgressWhyLocked
// (mu held; released, the request observed for popularity and the
// refusal logged at warn, when it returns errOverEgress). nil, with mu
// still held, otherwise.
func (m *Manager) refuseOverEgressLocked(r *lsm.Request, user string, now time.Time) error {
	why, over := m.overEgressWhyLocked(r, now)
	if !over {
		return nil
	}
	// The demand counts all the same (popularity, the storage planner's
	// replicas): the operator may give the nodes more egress, and it was
	// counted when such a request waited out the queue deadline.
	smm.Observe(m.planner, r.Title, r.Site, now)
	m.mu.Unlock()
	m.capRefusals.log(m.log, now, refusedOverEgress, slog.LevelWarn, "admission refused at once: "+why,
		"title", r.Title, "user", user, "bitrate_bps", r.Bitrate, "site", r.Site)
	return errOverEgress
}

// streamableLocked refuses a prefetch of t on node id, the operator's or
// the storage planner's (mu held, the node registered), with
// FAILED_PRECONDITION when t's bitrate is more than the node's egress:
// filled there, it would take disk and an origin channel for a copy no
// viewer could play there. The Replicator plans no replica of a title
// on such a node (smm, replicate_egress.go), so this guards the
// operator's orders and any other planner; a planner's order so refused
// counts as a failed fill (retried after the Replicator's backoff).
func (m *Manager) streamableLocked(id string, t store.Title) error {
	n := m.sched.Node(id)
	if n == nil {
		return nil
	}
	if !canStream(n, t) {
		e := n.Capacity.EgressBps
		return status.Errorf(codes.FailedPrecondition, "title %q (%.1f Mbit/s) is more than node %q can stream (egress_bps %.1f Mbit/s): no viewer could play it there",
			t.ID, float64(t.BitrateBps)/1e6, id, float64(e)/1e6)
	}
	return nil
}

// canStream reports whether node n could stream one viewer of t: t's
// bitrate (bit/s; unknown, 0, counts as streamable) no more than the
// node's egress_bps, as lsm's admission requires of a reservation.
func canStream(n *lsm.Node, t store.Title) bool {
	e := n.Capacity.EgressBps
	return e <= 0 || t.BitrateBps <= e
}

// canHold reports whether n's disk (Capacity.DiskBytes, when known) is
// at least t's size: the storage planner places no copy, not a pinned
// one, on a disk smaller than the title (smm's cannotHold).
func canHold(n *lsm.Node, t store.Title) bool {
	d := n.Capacity.DiskBytes
	return d <= 0 || t.SizeBytes <= d
}
