// Package boundcheck is the `vodcluster bound` command: from a request
// trace CSV (as `vodcluster sim --trace-out` writes it) it recomputes the
// offline lower bounds on origin bytes (package bound: with the residency
// rule when the trace has session ends, and the instant one) and what each
// eviction policy fetches as one cache of the same size (package replay),
// so the simulator's storage figures can be checked independently.
package boundcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"vodcluster/smm"
	"vodcluster/smm/bound"
	"vodcluster/smm/replay"
)

// Result is the check of one trace.
type Result struct {
	Rows     int   `json:"rows"`     // rows of the trace
	Served   int   `json:"served"`   // rows with a node (Record.Served): the requests that played
	Capacity int64 `json:"capacity"` // cache size, bytes
	// TraceFillBytes is the bytes of the rows marked as fills: what the
	// run that wrote the trace fetched on demand (its prefetches are not
	// in the trace).
	TraceFillBytes int64 `json:"trace_fill_bytes"`
	// Residency is true when the trace has session ends (end_s): Bound is
	// then the residency-aware bound (bound.Residency), the bound for a
	// VOD cluster; otherwise Bound is the instant one.
	Residency bool `json:"residency"`
	// AnyWarm: the cache could start with any titles (bound.Options).
	AnyWarm bool         `json:"any_warm,omitempty"`
	Bound   bound.Result `json:"bound"`
	// Instant is the bound with every request taken as an instant
	// (bound.Compute, Berger et al.'s model): lower, since it lets a
	// title leave the cache while its sessions still play.
	Instant bound.Result `json:"instant"`
	// Policies are the eviction policies each run as one cache of
	// Capacity bytes (package replay: with the residency rule when the
	// trace has session ends, replay.RunSessions, else over instants).
	Policies []replay.Result `json:"policies"`
	// Oracle is gdsf run the same way knowing each title's number of
	// requests in the trace in advance (replay.Oracle): an online policy
	// with perfect popularity knowledge. Between it and the bound lies
	// what only knowing when requests come would save.
	Oracle replay.Result `json:"oracle"`
}

// Check computes the bounds and replays policies (eviction policy names;
// nil means all) over the served requests of recs with a cache of
// capacity bytes. It fails on a malformed or empty trace, a negative capacity, a
// trace whose sessions in progress need more than capacity
// (bound.ErrInfeasible) or an unknown policy.
func Check(recs []bound.Record, capacity int64, policies []string) (Result, error) {
	return CheckWith(recs, capacity, policies, bound.Options{})
}

// CheckWith is Check with bound options (AnyWarm for a trace measured
// after a warm-up, as `vodcluster sim --warmup-days` writes it).
func CheckWith(recs []bound.Record, capacity int64, policies []string, opt bound.Options) (Result, error) {
	if len(recs) == 0 {
		return Result{}, fmt.Errorf("%w: no requests (only the header)", bound.ErrBadTrace)
	}
	res := Result{Rows: len(recs), Capacity: capacity, Residency: bound.HasEnds(recs), AnyWarm: opt.AnyWarm}
	for _, r := range recs {
		if r.Fill {
			res.TraceFillBytes += r.Bytes
		}
	}
	if policies == nil {
		policies = smm.Evictors()
	}
	// The names are checked before the bounds, which take tens of seconds
	// on a simulated day.
	evs := make([]smm.Evictor, 0, len(policies))
	for _, p := range policies {
		ev, err := smm.NewEvictor(strings.TrimSpace(p))
		if err != nil {
			return res, err
		}
		evs = append(evs, ev)
	}
	reqs := bound.ServedRequests(recs)
	res.Served = len(reqs)
	inst, err := bound.Compute(reqs, capacity, opt)
	if err != nil {
		return res, err
	}
	res.Instant, res.Bound = inst, inst
	if res.Residency {
		if res.Bound, err = bound.Residency(reqs, capacity, opt); err != nil {
			return res, err
		}
	}
	run := replay.Run
	if res.Residency {
		run = replay.RunSessions
	}
	for _, ev := range evs {
		r, err := run(reqs, capacity, ev)
		if err != nil {
			return res, err
		}
		res.Policies = append(res.Policies, r)
	}
	res.Oracle, err = run(reqs, capacity, replay.Oracle(reqs))
	return res, err
}

// WriteText writes r as a table: origin bytes in GB and as a ratio to the
// bound.
func (r Result) WriteText(w io.Writer) error {
	gb := func(b int64) string { return fmt.Sprintf("%.1f", float64(b)/1e9) }
	model := "instant requests (no end_s in the trace)"
	if r.Residency {
		model = "residency: each title cached from time_s to end_s"
	}
	if r.AnyWarm {
		model += ", any titles cached at the start"
	}
	if _, err := fmt.Fprintf(w, "%d requests served of %d, cache %d bytes (%s GB), bound by %s, %s\n",
		r.Served, r.Rows, r.Capacity, gb(r.Capacity), r.Bound.Method, model); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	ratio := func(b int64) string {
		if r.Bound.OriginBytes == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", float64(b)/float64(r.Bound.OriginBytes))
	}
	fmt.Fprintf(tw, "\torigin bytes\torigin GB\tratio to bound\t\n")
	type row struct {
		name string
		b    int64
	}
	rows := []row{
		{"lower bound (offline optimum >=)", r.Bound.OriginBytes},
		{"pfoo-l alone", r.Bound.PFOOLBytes},
		{"feasible offline schedule", r.Bound.UpperBytes},
		{"static oracle (counts known)", r.Bound.StaticBytes},
		{"compulsory (first requests)", r.Bound.CompulsoryBytes},
	}
	if r.Residency {
		rows = append(rows,
			row{"one fetch per busy interval", r.Bound.BusyBytes},
			row{"instant bound (sessions ignored)", r.Instant.OriginBytes},
			row{"peak bytes in use", r.Bound.PeakInUseBytes})
	}
	rows = append(rows, row{"no cache", r.Bound.TotalBytes}, row{"trace's demand fills", r.TraceFillBytes})
	how := " as one cache (instants)"
	if r.Residency {
		how = " as one cache"
	}
	for _, p := range r.Policies {
		rows = append(rows, row{p.Policy + how, p.OriginBytes})
	}
	rows = append(rows, row{"gdsf knowing each title's count" + how, r.Oracle.OriginBytes})
	for _, x := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", x.name, x.b, gb(x.b), ratio(x.b))
	}
	return tw.Flush()
}

// NewCommand returns the `bound` command: the trace CSV as the argument
// or --trace FILE ("-" for stdin), --capacity BYTES (the cluster's total
// disk), --policies (comma-separated eviction policies, default all),
// --json.
func NewCommand() *cobra.Command {
	var trace, policies string
	var capacity int64
	var asJSON, anyWarm bool
	cmd := &cobra.Command{
		Use:   "bound --capacity BYTES FILE",
		Short: "Offline lower bound on origin bytes for a request trace, and each eviction policy as one cache",
		Long: "Reads a request trace CSV (time_s,title,bytes,node,fill,end_s; as written by `vodcluster sim --trace-out`)\n" +
			"and prints the lower bound on the bytes any storage policy must fetch from the origin with a cache of\n" +
			"--capacity bytes, required: the trace does not hold it (the simulator prints its cluster's total disk,\n" +
			"`cluster disk N bytes`). With end_s, each title must stay cached while its sessions play (the\n" +
			"residency rule of a VOD node, which streams from its own disk);\n" +
			"the bound is FOO's interval LP with those forced intervals, bounded by PFOO-L and its Lagrangian dual.\n" +
			"The instant bound (sessions ignored, Berger et al. 2018), a feasible offline schedule and what each\n" +
			"eviction policy fetches as one cache are printed next to it.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flag := "--trace" // what gave the trace, for its file's errors
			if len(args) == 1 {
				flag = "trace file"
				if trace != "" && trace != args[0] {
					return fmt.Errorf("bound: two traces given (%s and --trace %s)", args[0], trace)
				}
				trace = args[0]
			}
			if err := needed(trace, capacity, cmd.Flags().Changed("capacity")); err != nil {
				return err
			}
			in := cmd.InOrStdin()
			if trace != "-" {
				f, err := os.Open(trace)
				if err != nil {
					// It was "open FILE: ...", not naming what gave FILE.
					var pe *fs.PathError
					if errors.As(err, &pe) {
						err = pe.Err
					}
					return fmt.Errorf("bound: %s %s: cannot open it: %w", flag, trace, err)
				}
				defer f.Close()
				in = f
			}
			recs, err := bound.ReadCSV(in)
			if err != nil {
				return fmt.Errorf("%s %s: %w", flag, trace, err)
			}
			var ps []string
			if cmd.Flags().Changed("policies") {
				for _, p := range strings.Split(policies, ",") {
					if p = strings.TrimSpace(p); p != "" {
						ps = append(ps, p)
					}
				}
				if len(ps) == 0 {
					return fmt.Errorf("bound: --policies %q names no policy", policies)
				}
			}
			res, err := CheckWith(recs, capacity, ps, bound.Options{AnyWarm: anyWarm})
			if err != nil {
				return fmt.Errorf("%s: %w", trace, err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			return res.WriteText(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&trace, "trace", "", "request trace CSV (\"-\" = stdin); or give it as the argument")
	f.Int64Var(&capacity, "capacity", 0, "cache size in bytes, required: the cluster's total disk (vodcluster sim prints it: cluster disk N bytes)")
	f.StringVar(&policies, "policies", "", "eviction policies to replay, comma-separated (default all: "+strings.Join(smm.Evictors(), ",")+")")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&anyWarm, "any-warm", false, "the cache may start with any titles (a trace measured after a warm-up, sim --warmup-days)")
	return cmd
}

// needed says what the command lacks: the trace (the argument or --trace)
// and --capacity, which the trace does not hold, given (set says so) or
// not; nil when it has both.
func needed(trace string, capacity int64, set bool) error {
	const capHelp = "the cache size in bytes: the cluster's total disk, which vodcluster sim prints (cluster disk N bytes)"
	switch {
	case trace == "" && !set:
		return fmt.Errorf("bound: no trace file and no --capacity: give both, vodcluster bound --capacity BYTES FILE; BYTES is %s", capHelp)
	case trace == "":
		return errors.New("bound: no trace file: give it as the argument, or --trace FILE (- for stdin)")
	case !set:
		return fmt.Errorf("bound: --capacity BYTES is required: %s", capHelp)
	case capacity <= 0:
		return fmt.Errorf("bound: --capacity %d: must be > 0, %s", capacity, capHelp)
	}
	return nil
}
