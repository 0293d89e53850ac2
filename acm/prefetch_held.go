package acm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/lsm"
)

// heldHow says how node ns (n as the scheduler sees it, nil when not
// registered) has title in its view (mu held), for a prefetch's refusal:
// "held" (a complete copy; "held (stale: ...)" for one of another version
// than the origin's, lsm.Node.HoldsStale), "ordered" (a prefetch
// sent, not yet reported started: vodctl fills' ordered), "filling"
// (with vodctl fills' state when it is another: origin wait, origin
// retry, reserved), "" when it has neither copy nor fill.
func heldHow(ns *nodeState, n *lsm.Node, title string) string {
	st := ns.titles[title]
	switch {
	case st == nil:
		return ""
	case !st.GetFilling() && n != nil && n.HoldsStale(title):
		return heldStale
	case !st.GetFilling():
		return "held"
	}
	switch s := fillState(ns, title, false); s {
	case "ordered":
		return "ordered (its fill not started yet)"
	case "filling":
		return "filling"
	default:
		return "filling (vodctl fills: " + s + ")"
	}
}

// heldStale is heldHow's word for a stale copy: the title was replaced at
// the origin, the copy is kept only while a viewer plays it (or on a node
// without an origin).
const heldStale = "held (stale: the origin has another version)"

// heldWhereLocked names where title is held, filling or ordered on a node
// in service (mu held), one phrase for each of these, its nodes in order:
// `held on nodes "n1", "n3"`, `filling on node "n2"`; none when no node in service has it (a copy on a node out of
// service serves no new viewer: a prefetch naming no node places it). A
// stale copy or fill (lsm.Node.HoldsStale: of another version than the
// origin's, kept only while a viewer plays it) does not count: the
// cluster lacks the title's current version, which a prefetch naming no
// node fetches.
func (m *Manager) heldWhereLocked(title string) []string {
	var ids []string
	for id, ns := range m.nodes {
		if n := m.sched.Node(id); n != nil && m.sched.InService(n) && ns.titles[title] != nil && !n.HoldsStale(title) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, compareNodeIDs)
	var hows []string // in the order of their first node
	on := map[string][]string{}
	for _, id := range ids {
		how := heldHow(m.nodes[id], m.sched.Node(id), title)
		if on[how] == nil {
			hows = append(hows, how)
		}
		on[how] = append(on[how], strconv.Quote(id))
	}
	out := make([]string, 0, len(hows))
	for _, how := range hows {
		out = append(out, fmt.Sprintf("%s on %s %s", how, plural(len(on[how]), "node"), strings.Join(on[how], ", ")))
	}
	return out
}

// heldAlready is the ALREADY_EXISTS of a prefetch of title on node id
// that has it (how: heldHow's words), saying which: held, filling or
// ordered there, and where the operator sees it.
func heldAlready(id, title, how string) error {
	see := "vodctl fills"
	if strings.HasPrefix(how, "held") {
		see = "vodctl placement --title " + title
	}
	return status.Errorf(codes.AlreadyExists, "%q is already %s on node %q (%s)", title, how, id, see)
}

// clusterHasIt is the ALREADY_EXISTS of a prefetch of title naming no
// node while a node in service has it (where: heldWhereLocked's
// phrases, joined by "; "): the cluster has it, and naming a node orders
// another copy.
func clusterHasIt(title string, where []string) error {
	return status.Errorf(codes.AlreadyExists, "the cluster already has %q: %s (a prefetch naming no NODE fetches a title no node in service has; name a NODE to prefetch another copy there)",
		title, strings.Join(where, "; "))
}
