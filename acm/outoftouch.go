package acm

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"vodcluster/lsm"
	"vodcluster/proto/durtext"
)

// errNodesOutOfTouch refuses, at its queue deadline, a request no node
// in service could take while every node that could is out of touch: dead
// within RestoreGrace (the manager waits that long for it to come back
// before it forgets its sessions) or alive with its heartbeat stream
// broken (lsm.Node.Unreachable), and not drained nor at weight 0. Only at
// the deadline, never at once: such a node may come back while the
// request waits. RTSP 503 and HTTP 503, both with Retry-After (the queue
// deadline), their reason nodesOutOfTouch's; the viewer was told 453 "not
// enough bandwidth", as if the nodes were full, while the manager's log
// said no node is in service. It wraps errNoBandwidth (the outcome
// no_capacity).
var errNodesOutOfTouch = fmt.Errorf("%w: every node that could take it is out of touch", errNoBandwidth)

// nodesOutOfTouch is errNodesOutOfTouch with how many nodes the manager
// waits for (nodes, at least 1) and, for the operator's log, which
// (held: each with how long it has been out of touch).
type nodesOutOfTouch struct {
	nodes int
	held  string
}

// Error is the refusal's reason as errNoBandwidth's.
func (e nodesOutOfTouch) Error() string { return errNoBandwidth.Error() + ": " + e.reason() }

// Unwrap is errNodesOutOfTouch.
func (e nodesOutOfTouch) Unwrap() error { return errNodesOutOfTouch }

// reason is what the viewer is told: "no node is in service: 2 nodes out
// of touch, waiting up to restore_grace for them".
func (e nodesOutOfTouch) reason() string {
	if e.nodes == 1 {
		return "no node is in service: 1 node out of touch, waiting up to restore_grace for it"
	}
	return fmt.Sprintf("no node is in service: %d nodes out of touch, waiting up to restore_grace for them", e.nodes)
}

// noNodeInServiceReason is what the front doors tell a viewer refused
// with errNoNodeInService or errNodesOutOfTouch (RTSP's reason phrase in
// "Service Unavailable (...)", HTTP's body before ": try again later").
func noNodeInServiceReason(err error) string {
	var e nodesOutOfTouch
	if errors.As(err, &e) {
		return e.reason()
	}
	return "no node in service"
}

// deadlineRefusalLocked is the refusal of r, which reached its queue
// deadline with err (mu held): the at-once refusal that holds now
// (hopelessLocked: the manager's first RestoreGrace, or a dead node's,
// may have run out since the queue was last checked, by tick or a pump),
// or a nodesOutOfTouch when every node that could take r is out of touch
// (outOfTouchLocked); err otherwise, and for any err but lsm.ErrDeadline.
// Either is told the viewer rather than 453 "no bandwidth", which sends
// the operator to the nodes' egress.
func (m *Manager) deadlineRefusalLocked(r *lsm.Request, now time.Time, err error) error {
	if !errors.Is(err, lsm.ErrDeadline) {
		return err
	}
	if err = m.hopelessLocked(r, now, err); !errors.Is(err, lsm.ErrDeadline) {
		return err
	}
	if out := m.outOfTouchLocked(r, now); out.nodes > 0 {
		return out
	}
	return err
}

// outOfTouchLocked says which nodes that could take r the manager waits
// for (mu held): those dead within RestoreGrace or unreachable, neither
// drained nor at weight 0 (lsm.Counts), when no node that could take r is
// in service; nodes 0 otherwise. At most 8 are named, each with how long
// since its last heartbeat.
func (m *Manager) outOfTouchLocked(r *lsm.Request, now time.Time) nodesOutOfTouch {
	const most = 8
	var out nodesOutOfTouch
	var named []string
	for _, n := range m.sched.Nodes {
		if !lsm.Counts(n, r, m.deadBefore(now)) {
			continue
		}
		if m.sched.InService(n) {
			return nodesOutOfTouch{}
		}
		if n.Draining || n.Weight <= 0 {
			continue // back only when an operator acts
		}
		out.nodes++
		if out.nodes > most {
			continue
		}
		since := durtext.About(now.Sub(n.LastHeartbeat))
		if n.Alive {
			named = append(named, n.ID+" (heartbeat stream broken, last heartbeat "+since+" ago)")
		} else {
			named = append(named, n.ID+" (dead, last heartbeat "+since+" ago)")
		}
	}
	out.held = strings.Join(named, ", ")
	if out.nodes > most {
		out.held += fmt.Sprintf(" and %d more", out.nodes-most)
	}
	return out
}

// outOfTouchRefusedLocked logs the refusal of r of user with out, asked
// at asked and answered at now (after its queue deadline), at warn,
// collapsed as the other capacity refusals, and returns out (mu held, and
// released).
func (m *Manager) outOfTouchRefusedLocked(out nodesOutOfTouch, r *lsm.Request, user string, asked, now time.Time) error {
	m.mu.Unlock()
	which := "every node"
	if r.SiteOnly && r.Site != "" {
		which = fmt.Sprintf("every node of the viewer's site %q (site_only)", r.Site)
	}
	m.capRefusals.log(m.log, now, refusedNodesOutOfTouch, slog.LevelWarn,
		"admission refused while it waited: no node is in service: "+which+" that could take it is out of touch, and the manager waits up to restore_grace ("+
			durtext.Written(m.RestoreGrace)+") for a dead one to come back: "+out.held+
			"; start the nodes, or check that they reach the manager's NodeControl address "+m.GRPCAddr()+" (node.manager)",
		"title", r.Title, "user", user, "out_of_touch", out.nodes, "waited", now.Sub(asked))
	return out
}
