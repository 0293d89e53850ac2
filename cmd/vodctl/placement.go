package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	v1 "vodcluster/proto/vodcluster/v1"
)

func placementCmd(g *globals) *cobra.Command {
	var title, node string
	cmd := &cobra.Command{
		Use:   "placement",
		Short: "List which nodes hold which titles, and the partial fills they keep",
		Args:  noArgs,
		Long: "List which nodes hold which titles (complete or filling), the pins, and the partial fills\n" +
			"the nodes keep.\n\n" +
			"A partial fill is the beginning of a title a node kept after its fill stopped short (the origin\n" +
			"away, its viewers gone, the node stopped): not served, the title's next fill on that node resumes\n" +
			"from it. KEPT is \"partial NN%\" of the title's size, or \"stale NN%\" when its version (or size)\n" +
			"is no longer the catalog's (replaced at the origin: never resumed, removed at the title's next\n" +
			"fill there).\n" +
			"vodctl evict TITLE NODE removes one (refused while a fill of it runs there, or it is pinned).\n\n" +
			"STATE is where each copy stands, in vodctl fills' words: stored (complete), filling, ordered (a\n" +
			"prefetch sent to the node, not yet reported started), reserved (a fill on demand waiting for its viewer to\n" +
			"reach the node), origin wait (filling, its transfer not started at the origin yet), origin retry\n" +
			"(filling, its transfers failed since the origin last answered: the node retries them), node down\n" +
			"(the node misses its heartbeats: a copy, complete or filling, in its last report, or a pin to it).\n\n" +
			"STALE marks a copy, or a fill, of a version the origin no longer serves (the title was replaced\n" +
			"there): it takes no new viewer while another node can take the viewer with a fill, and the\n" +
			"manager evicts it once no session plays it (not while the origin is down).\n\n" +
			"PINNED is true for a copy pinned to its node or to the cluster (never evicted), or \"kept until\"\n" +
			"for one an operator's prefetch filled: no room is made with it before then (evict_hold from\n" +
			"the fill's end, 1h by default); vodctl evict removes it all the same.\n\n" +
			"SITE, when a node names its site, is the holder's: the storage planner places a title's\n" +
			"replicas at the sites whose viewers ask for it (docs/storage.md, Sites).\n\n" +
			"--title of a title no node holds, fills or pins adds a note on standard error (fetched from\n" +
			"the origin at its first request, or vodctl prefetch TITLE); of a title not in the catalog that\n" +
			"no node holds: exit status 1.",
		RunE: func(*cobra.Command, []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.ListPlacement(ctx, &v1.ListPlacementRequest{TitleId: title, NodeId: node})
			}, func(m proto.Message, w *tabwriter.Writer) {
				r := m.(*v1.ListPlacementResponse)
				// SITE, the holder's site, only when a holder has one.
				sited := slices.ContainsFunc(r.Replicas, func(p *v1.Replica) bool { return p.Site != "" })
				head := "TITLE\tNODE\tSTORED\tSIZE\tSTATE\tPINNED\tSTALE"
				if sited {
					head += "\tSITE"
				}
				fmt.Fprintln(w, head)
				for _, p := range r.Replicas {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\t%s\t%v", p.TitleId, p.NodeId, sizeText(p.StoredBytes), sizeText(p.SizeBytes), replicaState(p), pinnedCol(p), p.Stale)
					if sited {
						fmt.Fprintf(w, "\t%s", p.Site)
					}
					fmt.Fprintln(w)
				}
				if title != "" && !r.Standby && len(r.Replicas) == 0 && len(r.Partials) == 0 && len(r.ClusterPins) == 0 && len(r.NodePins) == 0 {
					// A header alone read as an answer cut short.
					fmt.Fprintln(g.errOut, noCopyNote(title, node))
				}
				if len(r.ClusterPins) > 0 {
					fmt.Fprintf(w, "pinned to the cluster:\t%s\n", strings.Join(r.ClusterPins, ", "))
				}
				for _, p := range r.NodePins {
					fmt.Fprintf(w, "pinned to node %s:\t%s (%s)\n", p.NodeId, p.TitleId, p.State)
				}
				if len(r.Partials) > 0 {
					// A line without a tab ends tabwriter's columns: the
					// partials align among themselves.
					fmt.Fprintln(w, "\npartial fills (not served; the next fill there resumes them):")
					fmt.Fprintln(w, "TITLE\tNODE\tSTORED\tSIZE\tKEPT\tPINNED\tSINCE")
					for _, p := range r.Partials {
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%v\t%s\n", p.TitleId, p.NodeId, sizeText(p.StoredBytes), sizeText(p.SizeBytes),
							partialKept(p), p.Pinned, unixMs(p.SinceUnixMs))
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&title, "title", "", "only this title")
	cmd.Flags().StringVar(&node, "node", "", "only this node")
	return cmd
}

// noCopyNote is vodctl placement --title's note for a title in the
// catalog that no node (or node, when given) holds, fills or pins.
func noCopyNote(title, node string) string {
	who := "no node holds or fills it"
	if node != "" {
		who = "node " + node + " neither holds nor fills it"
	}
	return fmt.Sprintf("note: %s: %s; it is fetched from the origin at its first request, or order it now: vodctl prefetch %s", title, who, title)
}

// withoutNode says what each placement action does without a NODE.
var withoutNode = map[string]string{
	"prefetch": "let the storage manager choose the node", "pin": "pin it to the cluster", "unpin": "unpin it from the cluster",
}

func placementActionCmd(g *globals, verb string) *cobra.Command {
	short := map[string]string{
		"prefetch": "Order a fill of TITLE from the origin (on NODE, or where the storage manager chooses)",
		"evict":    "Remove TITLE from NODE, or its partial fill there, cancelling a prefetch no viewer needs (refused while it plays); NODE is required",
		"pin":      "Pin TITLE to NODE, or to the cluster without NODE: never evicted",
		"unpin":    "Remove a pin",
	}[verb]
	long := map[string]string{
		"prefetch": short + ".\n\n" +
			"Not held to the off-peak window. On a node with max_fills_per_node fills in progress, or while\n" +
			"fills take every origin channel, it is queued (vodctl fills: queued) and ordered at the first\n" +
			"plan with a slot. A prefetch on a NODE that already has TITLE is refused (ALREADY_EXISTS), the\n" +
			"answer saying which: queued, ordered (its fill not started yet), filling or held there. Without\n" +
			"NODE it fetches a title the cluster lacks: refused the same way, naming the node, while TITLE is\n" +
			"queued on a node, or a node in service holds it, fills it or was ordered to; naming another\n" +
			"NODE orders a second copy there. A stale copy (vodctl placement: stale) does not count.\n" +
			"The order is kept in the manager's store until carried out (6 hours at most),\n" +
			"so a restarted manager or the standby taking over orders it again; while it is queued or waits\n" +
			"for a retry, vodctl evict TITLE NODE cancels it, and so it does once ordered or filling while no\n" +
			"viewer reads it, is on the way for it or pins it there: the fill stops (or never starts), its\n" +
			"bytes are dropped, it is not retried. A failed fill is retried with backoff, 10 attempts in all.\n" +
			"Once filled, the copy is kept there for the storage section's evict_hold (1h): no room is made\n" +
			"with it until then; vodctl evict removes it, vodctl pin keeps it for good.",
		"evict": short + ".\n\n" +
			"A copy is removed once no session plays it there: refused while one does, while a viewer\n" +
			"admitted there is on the way, or while it is pinned there (or to the cluster with no other\n" +
			"copy in service). A fill under way there is refused too (evict once it is complete), but for\n" +
			"a prefetch, ordered or filling, that no viewer reads, is on the way for or pins: the node\n" +
			"cancels it (it does not start, or its transfer from the origin stops, the bytes it got are dropped, not kept as a partial) and the prefetch\n" +
			"is not retried; the operator's prefetch orders of it there, queued, waiting for a retry or\n" +
			"under way, are cancelled. A viewer's stream is never cut. The title is then not prefetched on\n" +
			"NODE again by the storage manager for the storage section's evict_hold (1h).\n\n" +
			"A repeat is no error: a title of the catalog the node does not hold (nor a partial of it), it\n" +
			"prints \"nothing to do: ...\", exit status 0. A NODE not registered or a TITLE not in the\n" +
			"catalog (and not held there): exit status 1.",
		"pin": short + ".\n\n" +
			"A repeat is no error: pinned already, it prints \"nothing to do: ...\", exit status 0 (--json: the\n" +
			"manager's answer, its message \"already pinned\"). A TITLE not\n" +
			"in the catalog or a NODE not registered: exit status 1.",
		"unpin": short + ".\n\n" +
			"A repeat is no error: not pinned there, it prints \"nothing to do: ...\", exit status 0. A NODE\n" +
			"not registered or a TITLE not in the catalog (with no such pin): exit status 1.",
	}[verb]
	var node string
	use := verb + " TITLE [NODE]"
	if verb == "evict" {
		use = "evict TITLE NODE" // required: there is no eviction from the whole cluster (--node NODE does as well)
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  argsBetween(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &v1.PlacementRequest{TitleId: args[0], NodeId: node}
			// A script's unset "$NODE" is not taken for the cluster.
			emptyArg := len(args) == 2 && strings.TrimSpace(args[1]) == ""
			emptyFlag := cmd.Flags().Changed("node") && strings.TrimSpace(node) == ""
			if _, ok := withoutNode[verb]; ok && (emptyArg || emptyFlag) {
				return fmt.Errorf("%s %s: NODE is empty (leave it out to %s)", verb, args[0], withoutNode[verb])
			}
			if len(args) == 2 {
				if node != "" && node != args[1] {
					return fmt.Errorf("%s %s: NODE given twice (%s and --node %s)", verb, args[0], args[1], node)
				}
				req.NodeId = args[1]
			}
			if req.NodeId == "" && verb == "evict" {
				return fmt.Errorf("evict %s: name the NODE to evict it from (its holders: vodctl placement --title %s)", args[0], args[0])
			}
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				switch verb {
				case "prefetch":
					return c.Prefetch(ctx, req)
				case "evict":
					return c.Evict(ctx, req)
				case "pin":
					return c.Pin(ctx, req)
				default:
					return c.Unpin(ctx, req)
				}
			}, func(m proto.Message, w *tabwriter.Writer) {
				a := m.(*v1.PlacementAck)
				if verb == "pin" && a.Message == alreadyPinned {
					// As unpin's repeat says (read as a change made).
					fmt.Fprintf(w, "nothing to do: title %q is already pinned to %s\n", args[0], pinnedWhere(a.NodeId))
					return
				}
				fmt.Fprintf(w, "%s %s on %s: %s\n", verb, args[0], orCluster(a.NodeId), a.Message)
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "the NODE (same as the second argument)")
	return cmd
}

// replicaState is a copy's STATE: the manager's Replica.state, or from
// its filling flag for a manager that gives none.
func replicaState(p *v1.Replica) string {
	switch {
	case p.State != "":
		return p.State
	case p.Filling:
		return "filling"
	}
	return "stored"
}

// partialKept describes how much of its title a partial fill holds:
// "partial NN%", or "stale NN%" when its version (or size) is no longer the
// catalog's.
func partialKept(p *v1.NodePartial) string {
	pct := "?"
	if p.SizeBytes > 0 {
		pct = strconv.FormatFloat(100*float64(p.StoredBytes)/float64(p.SizeBytes), 'f', 0, 64) + "%"
	}
	if p.Stale {
		return "stale " + pct
	}
	return "partial " + pct
}

// pinnedCol is a copy's PINNED column: true, false, or, for the copy an
// operator's prefetch filled and not pinned, "kept until" the end of its
// keep.
func pinnedCol(p *v1.Replica) string {
	if !p.Pinned && p.KeptUntilUnixMs > 0 {
		return "kept until " + unixMs(p.KeptUntilUnixMs)
	}
	return strconv.FormatBool(p.Pinned)
}

// unixMs formats milliseconds since the Unix epoch as every time vodctl
// shows is (PINNED's "kept until", SINCE, NEXT TRY, a suspension's
// UNTIL): UTC in RFC 3339, "2026-12-07T17:30:00Z"; "-" for 0 (unknown).
// PINNED and NEXT TRY were local time as "2006-01-02 15:04:05 MST" while
// the suspensions were RFC 3339.
func unixMs(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

// alreadyPinned is the message of the manager's answer to a pin already
// in effect (PlacementAck.message).
const alreadyPinned = "already pinned"

// pinnedWhere names where a title is pinned as the manager's Unpin answer
// does: "node N", or "the cluster" for n empty.
func pinnedWhere(n string) string {
	if n == "" {
		return "the cluster"
	}
	return "node " + n
}

func orCluster(n string) string {
	if n == "" {
		return "the cluster"
	}
	return n
}

func fillsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "fills",
		Short: "List fills from the origin in progress, with their progress",
		Args:  noArgs,
		Long: "List fills from the origin in progress, with their progress.\n\n" +
			"STATE: ordered (a prefetch sent to the node, not yet reported started), reserved (a fill on demand\n" +
			"waiting for its viewer to reach the node), queued (the operator's prefetch waiting for a fill\n" +
			"slot on its node or an origin channel), filling, origin wait (filling, its transfer not started\n" +
			"at the origin yet: queued for a channel, as a prefetch that gave its channel to a viewer's fill\n" +
			"is, or paying the origin's setup delay), origin retry (filling, its transfers failed since the\n" +
			"origin last answered, which the node retries: ATTEMPTS counts them, NEXT TRY is the node's next,\n" +
			"\"now\" once it is due or under way, and the causes are listed below the table; the fill fails once the\n" +
			"origin has sent no byte for the node's fill_retry_for),\n" +
			"backoff (failed: retried at NEXT TRY; \"due\" once that has passed: retried at the planner's next\n" +
			"round with the origin answering, an origin channel and a fill slot on the node free),\n" +
			"node down (in the last report of a node now missing its heartbeats).\n" +
			"STORED of a fill not in progress is what the node kept of an earlier fill cut short (a partial,\n" +
			"PROGRESS \"NN% kept\"): its next attempt fetches only the rest from the origin.",
		RunE: func(*cobra.Command, []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.ListFills(ctx, &v1.ListFillsRequest{})
			}, func(m proto.Message, w *tabwriter.Writer) {
				fmt.Fprintln(w, "NODE\tTITLE\tSTATE\tPROGRESS\tSTORED\tSIZE\tPREFETCH\tATTEMPTS\tNEXT TRY")
				for _, f := range m.(*v1.ListFillsResponse).Fills {
					pct := "?"
					if f.State == "ordered" || f.State == "reserved" || f.State == "queued" || f.State == "backoff" {
						pct = "-"
						if f.StoredBytes > 0 && f.SizeBytes > 0 {
							pct = strconv.FormatFloat(100*float64(f.StoredBytes)/float64(f.SizeBytes), 'f', 0, 64) + "% kept"
						}
					} else if f.SizeBytes > 0 {
						pct = strconv.FormatFloat(100*float64(f.StoredBytes)/float64(f.SizeBytes), 'f', 0, 64) + "%"
					}
					next := "-"
					if f.State == "origin retry" && f.NextTryUnixMs <= time.Now().UnixMilli() {
						next = "now" // a retry under way, or due since the node's last report
					} else if at := time.UnixMilli(f.NextTryUnixMs); f.NextTryUnixMs > 0 && at.After(time.Now()) {
						next = unixMs(f.NextTryUnixMs)
					} else if f.NextTryUnixMs > 0 {
						next = "due" // waits for the origin, a channel or a slot
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%v\t%d\t%s\n", f.NodeId, f.TitleId, f.State, pct, sizeText(f.StoredBytes), sizeText(f.SizeBytes), f.Prefetch, f.Attempts, next)
				}
				retrying := false
				for _, f := range m.(*v1.ListFillsResponse).Fills {
					if f.State != "origin retry" || f.OriginError == "" {
						continue
					}
					if !retrying {
						fmt.Fprintln(w, "\nRetried through an outage of the origin (the last failure of each):")
						retrying = true
					}
					fmt.Fprintf(w, "%s %s: %s\n", f.NodeId, f.TitleId, f.OriginError)
				}
				if r := m.(*v1.ListFillsResponse); len(r.PlanWaitsFor) > 0 {
					fmt.Fprintf(w, "\nThe planner orders no prefetch or eviction yet: after the manager's restart or takeover it waits for the nodes of its restored plan to register: %s (until %s at most; vodctl node forget ID for a node that is gone).\n",
						firstOf(r.PlanWaitsFor, 10), unixMs(r.PlanWaitsUntilUnixMs))
				}
			})
		},
	}
}

// firstOf returns ids joined by ", ", the first n of them and how many
// more when there are more (a whole cluster restarting: hundreds).
func firstOf(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(" and %d more", len(ids)-n)
}
