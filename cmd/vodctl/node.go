package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"vodcluster/lsm"
	v1 "vodcluster/proto/vodcluster/v1"
)

func nodeCmd(g *globals) *cobra.Command {
	var weight int
	var overload float64
	var drain, undrain bool
	cmd := &cobra.Command{
		Use:   "node NODE_ID",
		Short: "Show a node, change its weight or overload threshold, or drain it (no new sessions; playing ones stay); node forget NODE_ID forgets a dead one",
		Long: "Without a change flag, show the node as vodctl nodes lists it, with its overload threshold;\n" +
			"a node not registered with the manager (not reporting to it since it started, or a standby)\n" +
			"by its stored setting (drain, weight, overload), applied when it registers (NOT_FOUND when it\n" +
			"has none). --weight, --overload, --drain and --undrain change it, a node not registered too\n" +
			"when it has a stored setting.\n\n" +
			"Exit status 3 when the manager made the change but could not save it in its store (it\n" +
			"holds in that manager until a restart, a takeover or the node's next registration): a\n" +
			"warning says so.",
		Example: "  vodctl node node-2\n  vodctl node node-2 --drain\n  vodctl node node-2 --undrain --weight 200\n  vodctl node forget node-2",
		Args:    argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &v1.SetNodeRequest{NodeId: args[0]}
			if cmd.Flags().Changed("weight") {
				if weight < 0 || weight > lsm.MaxWeight {
					return fmt.Errorf("--weight %d: want 0 (no new sessions) to %d (IPVS's range; %d = as the node announced)", weight, lsm.MaxWeight, lsm.DefaultWeight)
				}
				w := int32(weight)
				req.Weight = &w
			}
			if cmd.Flags().Changed("overload") {
				if !(overload >= 0 && overload <= 1) {
					return fmt.Errorf("--overload %v: want a utilization from the scheduler's normal limit (scheduler.normal, 0.8 by default) to 1, or 0 for the scheduler's default", overload)
				}
				if overload == 0 {
					overload = 0 // -0 (was sent as is, and shown as "overload -0.00")
				}
				req.Overload = &overload
			}
			// A flag given a value counts as given: --drain=false puts the
			// node back in service as --undrain does (it was taken for no
			// change, the node only shown, still draining), and
			// --undrain=false drains it.
			if cmd.Flags().Changed("drain") {
				d := drain
				req.Draining = &d
			}
			if cmd.Flags().Changed("undrain") {
				d := !undrain
				if req.Draining != nil && *req.Draining != d {
					return fmt.Errorf("--drain and --undrain together")
				}
				req.Draining = &d
			}
			if req.Weight == nil && req.Draining == nil && req.Overload == nil {
				return g.showNode(args[0])
			}
			held := "" // what the change asks that held already, when all of it did
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				held = settingHeld(req, nodeBefore(ctx, c, req.NodeId))
				return c.SetNode(ctx, req)
			}, func(m proto.Message, w *tabwriter.Writer) {
				n := m.(*v1.NodeInfo)
				if held != "" {
					// A repeat read as the change made (its line the first call's).
					fmt.Fprintf(w, "nothing to do: node %s %s\n", n.NodeId, held)
					return
				}
				if n.RtspAddr == "" { // not registered: only its stored setting changed
					// The weight was left out: --weight 7 was answered without
					// it. Shown when given now or stored (weight_stored: a
					// stored 0 too, which read as none); a manager without
					// weight_stored answers 0 for none as well, so a weight
					// other than 0 counts as stored.
					if req.Weight == nil && !n.WeightStored && n.Weight == 0 && !n.Draining && n.Overload == 0 {
						// Nothing left to store: the manager removed the
						// entry (an undrain back to no setting), and a
						// further change of the node is refused until it
						// registers. It said "stored setting: draining
						// false ...; applied when it registers".
						fmt.Fprintf(w, "node %s: not registered; no stored setting left (removed): it registers with the weight it announces, in service\n", n.NodeId)
						return
					}
					weight := ""
					if req.Weight != nil || n.WeightStored || n.Weight != 0 {
						weight = fmt.Sprintf(", weight %d", n.Weight)
					}
					fmt.Fprintf(w, "node %s: not registered; stored setting: draining %v%s, overload %s; applied when it registers\n",
						n.NodeId, n.Draining, weight, overloadText(n.Overload))
					return
				}
				fmt.Fprintf(w, "node %s: alive %v, draining %v, weight %d, overload %s, %s\n",
					n.NodeId, n.Alive, n.Draining, n.Weight, overloadText(n.Overload), nodeSessions(n))
			})
		},
	}
	cmd.AddCommand(nodeForgetCmd(g))
	// No default shown: a weight not given is left as it is (help said
	// "(default 100)", as if leaving it out set 100).
	cmd.Flags().IntVar(&weight, "weight", 0, "scheduling weight, 0..65535 as in IPVS (0 = no new sessions, 100 = as the node announced); left as it is when not given")
	cmd.Flags().Float64Var(&overload, "overload", 0, "utilization above which the node counts as overloaded, from the scheduler's normal limit (0.8 by default; the manager refuses less) to 1 (0 = the scheduler's default); left as it is when not given")
	cmd.Flags().BoolVar(&drain, "drain", false, "stop giving the node new sessions (--drain=false: as --undrain)")
	cmd.Flags().BoolVar(&undrain, "undrain", false, "put the node back in service")
	return cmd
}

// nodeSessions is node n's sessions in words: "2 sessions", or with
// those orphaned when it died "0 sessions (3 orphaned)".
func nodeSessions(n *v1.NodeInfo) string {
	if n.OrphanedSessions == 0 {
		return plural(int(n.Sessions), "session")
	}
	return fmt.Sprintf("%s (%d orphaned)", plural(int(n.Sessions), "session"), n.OrphanedSessions)
}

// nodeBefore is node id as the manager knows it before a change: its row
// of ListNodes, or for a node ListNodes does not list (not registered) its
// stored setting (SetNode without a change reads it); nil when ListNodes
// fails (the change's own answer says why) or neither knows it.
func nodeBefore(ctx context.Context, c v1.AdminClient, id string) *v1.NodeInfo {
	r, err := c.ListNodes(ctx, &v1.ListNodesRequest{})
	if err != nil {
		return nil
	}
	for _, n := range r.Nodes {
		if n.NodeId == id {
			return n
		}
	}
	if n, err := c.SetNode(ctx, &v1.SetNodeRequest{NodeId: id}); err == nil {
		n.WeightStored = n.WeightStored || n.Weight != 0 // as SetNode's answer: a manager without weight_stored answers 0 for none
		n.RtspAddr = ""
		return n
	}
	return nil
}

// settingHeld says what req asks of node n that n has already ("is already
// draining, has weight 100"), "" unless all of it is (or n is nil). A
// weight counts for a node not registered only when one is stored.
func settingHeld(req *v1.SetNodeRequest, n *v1.NodeInfo) string {
	if n == nil {
		return ""
	}
	var held []string
	if req.Draining != nil {
		if *req.Draining != n.Draining {
			return ""
		}
		held = append(held, map[bool]string{true: "is already draining", false: "is already in service (not draining)"}[n.Draining])
	}
	if req.Weight != nil {
		if *req.Weight != n.Weight || (n.RtspAddr == "" && !n.WeightStored) {
			return ""
		}
		held = append(held, fmt.Sprintf("already has weight %d", n.Weight))
	}
	if req.Overload != nil {
		if *req.Overload != n.Overload {
			return ""
		}
		held = append(held, "already has overload "+overloadText(n.Overload))
	}
	return strings.Join(held, ", ")
}

// showNode prints node id's row of vodctl nodes, and its overload
// threshold (0 = the scheduler's default), or with --json its NodeInfo. A
// node the manager does not list (not registered with it: a restarted
// manager the node has not reported to yet, or a standby) is shown by its
// stored setting, which SetNode without a change answers (the manager
// reads it, and changes nothing); NOT_FOUND when it has none either.
func (g *globals) showNode(id string) error {
	return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
		r, err := c.ListNodes(ctx, &v1.ListNodesRequest{})
		if err != nil {
			return nil, err
		}
		for _, n := range r.Nodes {
			if n.NodeId == id {
				n.Standby = r.Standby // the note beside it, as vodctl nodes prints
				return n, nil
			}
		}
		n, err := c.SetNode(ctx, &v1.SetNodeRequest{NodeId: id})
		if status.Code(err) == codes.NotFound {
			// On a standby a node registered only with the active
			// manager, without a stored setting (most nodes), is not
			// known here: said so, not read as a node out of the cluster.
			hint := ""
			if slices.Contains(r.NotRegistered, id) {
				return nil, status.Errorf(codes.NotFound, "node %q has not registered since the manager started (it knows the node from its store: down as far as it knows); vodctl node forget %s if it is gone", id, id)
			}
			if r.Standby {
				hint = fmt.Sprintf("; %s does not hold the planner lock %s: it does not know a node registered only with the active manager; %s", g.manager, notHeldWhy, notHeldDo)
			}
			return nil, status.Errorf(codes.NotFound, "node %q is not registered with the manager and has no stored setting (vodctl nodes lists those registered)%s", id, hint)
		}
		return n, err
	}, func(m proto.Message, w *tabwriter.Writer) {
		n := m.(*v1.NodeInfo)
		if n.RtspAddr == "" { // not registered: its stored setting
			weight := "none stored (it gets the one it announces)"
			if n.WeightStored || n.Weight != 0 { // as SetNode's answer: a manager without weight_stored answers 0 for none
				weight = fmt.Sprint(n.Weight)
			}
			fmt.Fprintf(w, "node %s: not registered with this manager (not reporting to it); stored setting, applied when it registers: draining %v, weight %s, overload %s\n",
				n.NodeId, n.Draining, weight, overloadText(n.Overload))
			return
		}
		nodesTable(w, []*v1.NodeInfo{n})
		w.Flush()
		fmt.Fprintf(w, "overload %s\n", overloadText(n.Overload))
	})
}

func nodeForgetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "forget NODE_ID",
		Short: "Forget a dead or decommissioned node: it leaves the node list, placement and metrics",
		Long: "Forget a dead or decommissioned node. It leaves the node list, the scheduler, the placement\n" +
			"and the manager's metrics; the sessions left on it end; the commands queued for its return\n" +
			"are dropped; its stored setting (drain, weight, overload), eviction holds and pins are\n" +
			"removed (the titles unpinned are listed: pin them elsewhere if they should stay pinned).\n" +
			"A node registering later under the id starts fresh.\n\n" +
			"Refused while the node is alive: drain it, let its sessions end, stop it, and forget it once\n" +
			"vodctl nodes lists it dead. Refused on a standby manager: forget it on the active one.\n\n" +
			"Exit status 3 when the node is forgotten in the manager but not all of its stored state\n" +
			"could be removed: a warning names what is left (forget it again to remove it).",
		Example: "  vodctl node node-3 --drain\n  vodctl sessions --node node-3   # until none are left\n" +
			"  # stop the node (systemctl stop vodcluster-node), then:\n  vodctl node forget node-3",
		Args: argsBetween(1, 1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.ForgetNode(ctx, &v1.ForgetNodeRequest{NodeId: args[0]})
			}, func(m proto.Message, w *tabwriter.Writer) {
				r := m.(*v1.ForgetNodeResponse)
				fmt.Fprintf(w, "node %s: %s\n", r.NodeId, r.Message)
			})
		},
	}
}

// overloadText is a node's overload threshold as vodctl node shows it:
// the utilization with two decimals, or "default" for 0 (the manager's
// scheduler threshold, which the answer does not carry).
func overloadText(o float64) string {
	if o == 0 {
		return "default (the manager's)"
	}
	return fmt.Sprintf("%.2f", o)
}

// plural is n and noun, with an s when n is not 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
