package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"vodcluster/cmd/internal/durflag"
	"vodcluster/cmd/internal/fileflag"
	"vodcluster/cmd/internal/probe"
	"vodcluster/proto/grpctls"
	"vodcluster/proto/token"
	v1 "vodcluster/proto/vodcluster/v1"
)

type globals struct {
	manager string
	token   string
	// tokenFile is --token-file's path; tokenSet and tokenFileSet say
	// which of --token and --token-file was given (readToken).
	tokenFile              string
	tokenSet, tokenFileSet bool
	// tokenFrom names where the token came from, as the operator gave it:
	// --token, --token-file, $VODCTL_TOKEN or $VODCTL_TOKEN_FILE (readToken).
	tokenFrom string
	json      bool
	timeout   durflag.Value // --timeout, as typed for errors
	tls       bool          // TLS to the manager
	tlsCA     string        // PEM CA(s) to verify the manager with (implies tls)
	tlsEnv    error         // $VODCTL_TLS neither on nor off: refused by admin calls (play does not use it)
	out       io.Writer     // where admin calls print: the command's output (os.Stdout unless a test sets it)
	errOut    io.Writer     // where admin calls print notes: the command's error output (os.Stderr unless a test sets it)
}

func newRoot() *cobra.Command {
	g := &globals{timeout: durflag.Value{D: 10 * time.Second}}
	root := &cobra.Command{
		Use:   "vodctl",
		Short: "Operate a vodcluster: play titles, inspect nodes and sessions, steer scheduling and storage",
		Long: "Operate a vodcluster: play titles, inspect nodes and sessions, steer scheduling and storage.\n\n" +
			"Exit status: 0 on success, 1 on an error, 3 for a change the manager made but could not\n" +
			"save in its store (vodctl policy NAME, vodctl node ID with a change, vodctl node forget: a\n" +
			"warning on standard error says so; lost at a restart or a takeover), and for vodctl play\n" +
			"interrupted by a signal 128 + its number (130 for SIGINT, 143 for SIGTERM).",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagError) // the subcommands inherit it
	root.PersistentFlags().StringVar(&g.manager, "manager", envOr("VODCTL_MANAGER", "127.0.0.1:9090"), "manager gRPC address host:port ($VODCTL_MANAGER)")
	// The token's default is read at run time, not shown in --help.
	root.PersistentFlags().StringVar(&g.token, "token", "", "the manager's admin token, when it has one (default $VODCTL_TOKEN); --token-file keeps it off the command line")
	root.PersistentFlags().StringVar(&g.tokenFile, "token-file", "", "a file holding the manager's admin token, as its admin_token_file (default $VODCTL_TOKEN_FILE)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		g.out, g.errOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
		// read when the Admin API is called (admin): vodctl play needs
		// none, and a token file it may not read must not stop it
		g.tokenSet, g.tokenFileSet = cmd.Flags().Changed("token"), cmd.Flags().Changed("token-file")
		if g.tokenSet && g.tokenFileSet {
			return errors.New("--token and --token-file: give one")
		}
		if !cmd.Flags().Changed("tls") {
			// Read as --tls is (it took "1" alone: VODCTL_TLS=true went
			// plaintext without a word).
			if v := os.Getenv("VODCTL_TLS"); v != "" {
				on, err := strconv.ParseBool(v)
				if err != nil {
					g.tlsEnv = fmt.Errorf("$VODCTL_TLS %q: want 1 or 0 (true or false)", v)
				}
				g.tls = on
			}
		}
		return nil
	}
	// The default of --tls, $VODCTL_TLS, is read at run time.
	root.PersistentFlags().BoolVar(&g.tls, "tls", false, "TLS to the manager (its grpc_tls_cert_file), verified with the system's roots or --tls-ca (default $VODCTL_TLS: 1 or true)")
	root.PersistentFlags().StringVar(&g.tlsCA, "tls-ca", os.Getenv("VODCTL_TLS_CA"), "PEM CA file to verify the manager's certificate with; implies --tls ($VODCTL_TLS_CA)")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print JSON instead of a table (keys in lowerCamelCase, as the Admin API's protojson: sizeBytes, videoFrames; integers as numbers)")
	root.PersistentFlags().Var(&g.timeout, "timeout", "timeout of an admin call")
	root.AddCommand(playCmd(g), titlesCmd(g), nodesCmd(g), nodeCmd(g), sessionsCmd(g), policyCmd(g),
		placementCmd(g), placementActionCmd(g, "prefetch"), placementActionCmd(g, "evict"),
		placementActionCmd(g, "pin"), placementActionCmd(g, "unpin"), fillsCmd(g), popularityCmd(g), suspendCmd(g), suspensionsCmd(g), unlockCmd(g))
	return root
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// admin dials the manager and runs f with an Admin client.
func (g *globals) admin(f func(ctx context.Context, c v1.AdminClient) (proto.Message, error), table func(m proto.Message, w *tabwriter.Writer)) error {
	if g.tlsEnv != nil {
		return g.tlsEnv
	}
	if g.timeout.D <= 0 {
		return fmt.Errorf("--timeout %s: want a positive duration (e.g. 10s)", &g.timeout)
	}
	if _, port, err := net.SplitHostPort(g.manager); err != nil || port == "" {
		// gRPC would dial port 443 of a bare host.
		// Quoted without a password (a URL given as --manager).
		return fmt.Errorf("--manager %q: want HOST:PORT, the manager's grpc_listen (port 9090 by default)", probe.Redacted(g.manager))
	}
	if err := g.readToken(); err != nil {
		return err
	}
	creds, err := grpctls.Client(g.tls || g.tlsCA != "", g.tlsCA)
	if err != nil {
		return fmt.Errorf("--tls-ca: %w", err)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	var unchecked bool // the manager said it checks no admin token
	if g.token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(token.Bearer(g.token)), grpc.WithChainUnaryInterceptor(
			func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, copts ...grpc.CallOption) error {
				var md metadata.MD
				err := invoker(ctx, method, req, reply, cc, append(copts, grpc.Header(&md))...)
				if slices.Contains(md.Get(v1.HeaderAdminAuth), v1.AdminAuthNone) {
					unchecked = true
				}
				return err
			}))
	}
	conn, err := grpc.NewClient(g.manager, opts...)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout.D)
	defer cancel()
	m, err := f(ctx, v1.NewAdminClient(conn))
	if g.out == nil {
		g.out = os.Stdout
	}
	if g.errOut == nil {
		g.errOut = os.Stderr
	}
	if unchecked {
		fmt.Fprintf(g.errOut, "warning: the manager takes no admin token (admin_token_file unset): the token of %s was not checked\n", g.tokenFrom)
	}
	if v1.IsNotSaved(err) {
		return notSaved(err)
	}
	if v1.IsAlreadyDone(err) {
		// Its end state holds (not pinned there, not suspended, no live
		// session): a script's repeat of the command is not an error.
		return g.alreadyDone(status.Convert(err).Message())
	}
	if err != nil {
		return g.explain(err)
	}
	if s, ok := m.(interface{ GetStandby() bool }); ok && s.GetStandby() {
		// Its empty tables read as a cluster without nodes or viewers.
		fmt.Fprintf(g.errOut, "note: %s does not hold the planner lock %s: %s; %s\n", g.manager, notHeldWhy, standbyShows(m), notHeldDo)
	}
	if g.json || table == nil {
		out, err := adminJSON(m)
		if err != nil {
			return err
		}
		fmt.Fprintln(g.out, string(out))
		return nil
	}
	w := tabwriter.NewWriter(g.out, 0, 4, 2, ' ', 0)
	table(m, w)
	return w.Flush()
}

func nodesCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "nodes",
		Short: "List nodes with their load",
		Args:  noArgs,
		Long: "List nodes with their load.\n\n" +
			"SESSIONS are admitted sessions, FILLING those served from a fill in progress. A node that died\n" +
			"shows the sessions it cut off as \"0 (3 orphaned)\": vodctl sessions lists them orphaned, and\n" +
			"they end unless the node is back within restore_grace.\n" +
			"RESERVED is the sum of their titles' bitrates; EGRESS is what the node measured sending over\n" +
			"its last heartbeat interval, so it can show a session that ended within that interval.\n" +
			"LOAD is the scheduler's load formula L = (Rs + a*Rd)/E + (b/Ul)*max(0, U - Ul): Rs and Rd\n" +
			"the bit/s of sessions served from disk and from a fill, E the node's weighted capacity,\n" +
			"U its utilization (docs/scheduling.md). 0.50 is half the egress reserved, no fill.\n" +
			"DISK FREE is the free disk the node last reported (\"unknown\" when it could not measure it):\n" +
			"fills ordered since are not taken off until the node reports them.\n" +
			"PARTIALS are the partial fills the node keeps (fills cut short, kept for the title's next\n" +
			"fill there to resume; not served, not in TITLES), PARTIAL their bytes, which DISK FREE\n" +
			"counts as free (the node removes them first when a fill needs room): vodctl placement lists them.\n" +
			"ORIGIN, shown when a node has none (started without origin:), is \"none\" for such a node: it\n" +
			"plays only the titles on its disk, gets no viewer of another title and no prefetch.\n" +
			"UDP, shown when a node sends RTSP media over TCP only (tcp_only:), is \"no\" for such a node:\n" +
			"it gets no SETUP that offers only UDP (--json: tcpOnly, for every node).\n\n" +
			"Below the table: the nodes the manager knows from its store that have not registered since\n" +
			"it started (down as far as it knows).\n" +
			"With no node registered, a note on standard error says what to check (the nodes running,\n" +
			"their manager: address and cluster secret; on a standby: nodes report to the active manager).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				r, err := c.ListNodes(ctx, &v1.ListNodesRequest{})
				if err == nil && len(r.GetNodes()) == 0 && len(r.GetNotRegistered()) == 0 && !r.GetStandby() {
					// A header alone, exit 0: say why there is no row
					// (on a standby its one note says it: standbyShows).
					fmt.Fprintln(cmd.ErrOrStderr(), noNodeNote())
				}
				return r, err
			}, func(m proto.Message, w *tabwriter.Writer) {
				r := m.(*v1.ListNodesResponse)
				nodesTable(w, r.Nodes)
				if len(r.NotRegistered) > 0 {
					fmt.Fprintf(w, "\nNot registered since the manager started (down as far as it knows): %s (vodctl node forget ID for a node that is gone)\n", strings.Join(r.NotRegistered, ", "))
				}
			})
		},
	}
}

// noNodeNote is the note of vodctl nodes on a manager, not a standby,
// that lists no node (a standby's is its standby note: standbyShows).
func noNodeNote() string {
	return "no node: no node has registered with this manager: start the nodes, and check their manager: address (this manager's grpc_listen) and that their secret_file holds the manager's cluster secret; a node's log says why it cannot register"
}

// nodesTable writes the table of vodctl nodes for nodes: a header and a
// row each (SITE only when a node has a site, ORIGIN only when a node has
// none: "none" for it, "yes" for the others, UDP only when a node sends
// over TCP only: "no" for it, "yes" for the others).
// sessionsText is node n's SESSIONS: its admitted sessions, and those
// orphaned when it died, "0 (3 orphaned)" (vodctl sessions lists them).
func sessionsText(n *v1.NodeInfo) string {
	if n.OrphanedSessions == 0 {
		return strconv.Itoa(int(n.Sessions))
	}
	return fmt.Sprintf("%d (%d orphaned)", n.Sessions, n.OrphanedSessions)
}

func nodesTable(w io.Writer, nodes []*v1.NodeInfo) {
	sited := slices.ContainsFunc(nodes, func(n *v1.NodeInfo) bool { return n.Site != "" })
	bare := slices.ContainsFunc(nodes, func(n *v1.NodeInfo) bool { return n.NoOrigin })
	tcpOnly := slices.ContainsFunc(nodes, func(n *v1.NodeInfo) bool { return n.TcpOnly })
	head := "NODE\tRTSP\tALIVE\tDRAINING\tWEIGHT\tSESSIONS\tFILLING\tRESERVED(Mbit/s)\tEGRESS(Mbit/s)\tCAPACITY(Mbit/s)\tLOAD\tTITLES\tDISK FREE\tDISK\tPARTIALS\tPARTIAL"
	if sited {
		head += "\tSITE"
	}
	if bare {
		head += "\tORIGIN"
	}
	if tcpOnly {
		head += "\tUDP"
	}
	fmt.Fprintln(w, head)
	for _, n := range nodes {
		fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%d\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%d\t%s\t%s\t%d\t%s", n.NodeId, n.RtspAddr, n.Alive, n.Draining, n.Weight,
			sessionsText(n), n.FillSessions, float64(n.ReservedBps)/1e6, float64(n.EgressBps)/1e6,
			float64(n.GetCapacity().GetEgressBps())/1e6, n.Load, n.Titles,
			diskFree(n.DiskFreeBytes), sizeText(n.GetCapacity().GetDiskBytes()), n.Partials, sizeText(n.PartialBytes))
		if sited {
			fmt.Fprintf(w, "\t%s", n.Site)
		}
		if bare {
			origin := "yes"
			if n.NoOrigin {
				origin = "none" // it plays only the titles it holds
			}
			fmt.Fprintf(w, "\t%s", origin)
		}
		if tcpOnly {
			udp := "yes"
			if n.TcpOnly {
				udp = "no" // tcp_only: media inside the RTSP connection
			}
			fmt.Fprintf(w, "\t%s", udp)
		}
		fmt.Fprintln(w)
	}
}

// diskFree is the DISK FREE cell of vodctl nodes for a node's
// disk_free_bytes: its sizeText, or "unknown" when the node could not
// measure it (-1: no disk_bytes, and its file system's free space
// unknown).
func diskFree(b int64) string {
	if b < 0 {
		return "unknown"
	}
	return sizeText(b)
}

func sessionsCmd(g *globals) *cobra.Command {
	var node, user string
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions (admitted, playing, paused by an RTSP client, finished at the end of the title, orphaned by a dead node); sessions end: end some now",
		Long: "List the live sessions; vodctl sessions end ends some now.\n\n" +
			"STATE: admitted (redirected, not at its node yet), playing, paused (its RTSP client PAUSEd it,\n" +
			"or its player over TCP stopped reading without a PAUSE, as mpv paused does),\n" +
			"finished (played to the end of the title, held until TEARDOWN, a seek back or its timeout),\n" +
			"orphaned (its node died or has not registered again: no reservation; it ends unless the node\n" +
			"is back within restore_grace). An HTTP session (progressive or HLS) is never paused or finished.\n" +
			"BITRATE is the bit/s reserved for it on its node. IDLE is the seconds since its viewer was last\n" +
			"heard of, once its node reports it idle (RTSP paused and silent, or HTTP with no request, past\n" +
			"the node's session_timeout, 60 s): it lives to pause_timeout (5 min), and its subscriber's\n" +
			"next request at max_sessions_per_user supersedes it; \"-\" while it is not idle.",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				return c.ListSessions(ctx, &v1.ListSessionsRequest{NodeId: node, User: user})
			}, func(m proto.Message, w *tabwriter.Writer) {
				fmt.Fprintln(w, "SESSION\tUSER\tTITLE\tNODE\tSTATE\tPROTOCOL\tCLIENT\tBITRATE(kbit/s)\tIDLE(s)")
				for _, s := range m.(*v1.ListSessionsResponse).Sessions {
					idle := "-" // idle: paused and silent, or HTTP with no request (superseded first at the session limit)
					if s.IdleS > 0 {
						idle = fmt.Sprint(s.IdleS)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.SessionId, s.User, s.TitleId, s.NodeId, s.State, s.Protocol, s.ClientAddr, s.BitrateBps/1000, idle)
				}
				if m.(*v1.ListSessionsResponse).UserUnknown {
					fmt.Fprintf(w, "warning: the users file has no subscriber %q (check the name)\n", user)
				}
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "only this node's sessions")
	cmd.Flags().StringVar(&user, "user", "", "only this subscriber's sessions")
	cmd.AddCommand(endSessionsCmd(g))
	return cmd
}

func endSessionsCmd(g *globals) *cobra.Command {
	var user, reason string
	cmd := &cobra.Command{
		Use:   "end [SESSION ...]",
		Short: "End sessions now: the ones named, or every session of --user (their viewers are cut off)",
		Long: "End sessions now: the ones named, or every session of --user (their viewers are cut off).\n\n" +
			"Prints the sessions ended. Exit status 1 when a session named was not live (and so not\n" +
			"ended), or --user is not in the users file; --user with no live session prints\n" +
			"\"nothing to do: ...\", exit status 0 (a repeat is no error).",
		Example: "  vodctl sessions end 5bb32f90487153e79cb89c1b81e6fb53\n" +
			"  vodctl sessions end --user alice --reason 'account suspended'",
		Args: func(_ *cobra.Command, args []string) error {
			if (len(args) == 0) == (user == "") {
				return fmt.Errorf("name the sessions, or give --user, one of the two")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			var ended []string
			err := g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				r, err := c.EndSessions(ctx, &v1.EndSessionsRequest{SessionIds: args, User: user, Reason: reason})
				ended = r.GetSessionIds()
				return r, err
			}, func(m proto.Message, w *tabwriter.Writer) {
				ids := m.(*v1.EndSessionsResponse).SessionIds
				fmt.Fprintf(w, "ended %s:\n", plural(len(ids), "session"))
				for _, id := range ids {
					fmt.Fprintln(w, id)
				}
			})
			if err != nil {
				return err
			}
			// The manager ends the live ones among those named, NOT_FOUND
			// only when none is: the others were left unsaid, exit status 0.
			if missed := notIn(args, ended); len(missed) > 0 {
				return fmt.Errorf("not ended, not live (ended already, or never admitted; vodctl sessions lists the live ones): %s", strings.Join(missed, " "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "end every session of this subscriber")
	cmd.Flags().StringVar(&reason, "reason", "", "why (logged, sent to the viewer in the RTCP BYE, kept in the session records)")
	return cmd
}

// notIn returns the elements of want not in got, in want's order.
func notIn(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func policyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "policy [NAME]",
		Short: "Show the scheduling and storage policies, or switch the scheduling policy to NAME at run time (sessions are kept)",
		Long: "Show the scheduling policy and the storage policy (with its planner's counts since the\n" +
			"manager started), or switch the scheduling policy to NAME, one of those listed available,\n" +
			"at run time: sessions are kept. The storage policy is not switched here: it is the\n" +
			"manager's storage.policy setting.\n\n" +
			"With NAME, a first line says what changed (\"scheduling policy: lall → wlc\", or \"nothing to do:\n" +
			"the scheduling policy is already wlc\", exit status 0) from the policy the manager replaced, which it names in its answer (--json:\n" +
			"previousPolicy; a manager of an older release does not, and vodctl reads it first).\n\n" +
			"Exit status 3 when the manager uses the new policy but could not save it in its store\n" +
			"(a restart or a takeover goes back to the stored or configured one): a warning says so.",
		Args: argsBetween(0, 1),
		RunE: func(_ *cobra.Command, args []string) error {
			before := "" // the scheduling policy before the switch, when asked for one
			return g.admin(func(ctx context.Context, c v1.AdminClient) (proto.Message, error) {
				if len(args) == 1 {
					// The answer alone read as vodctl policy's: whether
					// anything changed went unsaid. Without an answer
					// (refused, unimplemented) SetPolicy's says it.
					// The read is for a manager whose answer does not
					// name the policy it replaced (previous_policy, read
					// with the change: another operator's change between
					// the two calls is not taken for this one's start).
					if old, err := c.GetPolicy(ctx, &v1.GetPolicyRequest{}); err == nil {
						before = old.Policy
					}
					p, err := c.SetPolicy(ctx, &v1.SetPolicyRequest{Policy: args[0]})
					if p.GetPreviousPolicy() != "" {
						before = p.GetPreviousPolicy()
					}
					return p, err
				}
				return c.GetPolicy(ctx, &v1.GetPolicyRequest{})
			}, func(m proto.Message, w *tabwriter.Writer) {
				p := m.(*v1.PolicyInfo)
				switch {
				case before == "":
				case before == p.Policy:
					fmt.Fprintf(w, "nothing to do: the scheduling policy is already %s\n", p.Policy)
				default:
					fmt.Fprintf(w, "scheduling policy: %s → %s\n", before, p.Policy)
				}
				fmt.Fprintf(w, "policy:\t%s\navailable:\t%v\n", p.Policy, p.Available)
				fmt.Fprintf(w, "storage policy:\t%s (planner %s)\navailable:\t%v\n", p.StoragePolicy, p.StoragePlanner, p.StorageAvailable)
				if st := p.StorageStats; st != nil {
					fmt.Fprintf(w, "storage planner:\tsince the manager started: %d plans ordered %d prefetches and %d evictions (%d placement moves in all); prefetches done %d, failed %d, retried %d (the plans' and the operator's by hand)\n",
						st.Plans, st.Prefetches, st.Evictions, st.Moves, st.FillsDone, st.FillsFailed, st.Retries)
				}
			})
		},
	}
}

// readToken sets g.token from, in this order, --token (g.tokenSet),
// --token-file (g.tokenFileSet: the file g.tokenFile), $VODCTL_TOKEN and
// the file $VODCTL_TOKEN_FILE names. A token file holds the token as the
// manager's admin_token_file does, surrounding white space ignored.
// g.tokenFrom names the one the token came from.
// Errors: a token file that cannot be read or holds only white space,
// naming the flag or variable and the file; a name that is no file and
// has no '/' is not shown (a token given as the file's name).
func (g *globals) readToken() error {
	file, from := g.tokenFile, "--token-file"
	switch {
	case g.tokenSet:
		g.tokenFrom = "--token"
		return nil
	case g.tokenFileSet:
	case os.Getenv("VODCTL_TOKEN") != "":
		g.token, g.tokenFrom = os.Getenv("VODCTL_TOKEN"), "$VODCTL_TOKEN"
		return nil
	case os.Getenv("VODCTL_TOKEN_FILE") != "":
		file, from = os.Getenv("VODCTL_TOKEN_FILE"), "$VODCTL_TOKEN_FILE"
	default:
		return nil
	}
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !strings.Contains(file, "/"):
		return fmt.Errorf("%s: no such file (its name, not shown, has no '/': if it is the token itself, give it with --token or $VODCTL_TOKEN)", from)
	case err != nil:
		return fileflag.Named(from, file, err)
	}
	if g.token = strings.TrimSpace(string(b)); g.token == "" {
		return fmt.Errorf("%s %s: the file holds no token", from, file)
	}
	g.tokenFrom = from
	return nil
}

// alreadyDone prints the manager's answer msg to a change whose end state
// already held (v1.IsAlreadyDone): one line "nothing to do: msg", or with
// --json {"nothing_to_do": true, "message": msg}. Exit status 0.
func (g *globals) alreadyDone(msg string) error {
	if g.json {
		out, err := json.Marshal(struct {
			NothingToDo bool   `json:"nothing_to_do"`
			Message     string `json:"message"`
		}{true, msg})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(g.out, string(out))
		return err
	}
	_, err := fmt.Fprintf(g.out, "nothing to do: %s\n", msg)
	return err
}
