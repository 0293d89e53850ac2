// Package boundcheck is the `vodcluster bound` command: from a request
// trace CSV (as `vodcluster sim --trace-out` writes it) it recomputes the
// offline lower bound on origin bytes (package bound) and what each
// eviction policy fetches as one cache of the same size (package replay),
// so the simulator's storage figures can be checked independently.
package boundcheck

import (
	"encoding/json"
	"fmt"
	"io"
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
	TraceFillBytes int64           `json:"trace_fill_bytes"`
	Bound          bound.Result    `json:"bound"`
	Policies       []replay.Result `json:"policies"` // one cache of Capacity bytes each
}

// Check computes the bound and replays policies (eviction policy names;
// nil means all) over the served requests of recs (in time order, as
// bound.ReadCSV returns them) with a cache of
// capacity bytes. It fails on a malformed trace, a negative capacity or an
// unknown policy.
func Check(recs []bound.Record, capacity int64, policies []string) (Result, error) {
	res := Result{Rows: len(recs), Capacity: capacity}
	var reqs []bound.Request
	for _, r := range recs {
		if r.Fill {
			res.TraceFillBytes += r.Bytes
		}
		if r.Served() {
			reqs = append(reqs, r.Request())
		}
	}
	res.Served = len(reqs)
	b, err := bound.Compute(reqs, capacity, bound.Options{})
	if err != nil {
		return res, err
	}
	res.Bound = b
	if policies == nil {
		policies = smm.Evictors()
	}
	for _, p := range policies {
		ev, err := smm.NewEvictor(p)
		if err != nil {
			return res, err
		}
		r, err := replay.Run(reqs, capacity, ev)
		if err != nil {
			return res, err
		}
		res.Policies = append(res.Policies, r)
	}
	return res, nil
}

// WriteText writes r as a table: origin bytes in GB and as a ratio to the
// bound.
func (r Result) WriteText(w io.Writer) error {
	gb := func(b int64) string { return fmt.Sprintf("%.1f", float64(b)/1e9) }
	if _, err := fmt.Fprintf(w, "%d requests served of %d, cache %s GB, bound by %s\n", r.Served, r.Rows, gb(r.Capacity), r.Bound.Method); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	ratio := func(b int64) string {
		if r.Bound.OriginBytes == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", float64(b)/float64(r.Bound.OriginBytes))
	}
	fmt.Fprintf(tw, "\torigin GB\tratio to bound\t\n")
	rows := []struct {
		name string
		b    int64
	}{
		{"lower bound (offline optimum >=)", r.Bound.OriginBytes},
		{"pfoo-l alone", r.Bound.PFOOLBytes},
		{"feasible offline schedule", r.Bound.UpperBytes},
		{"static oracle (counts known)", r.Bound.StaticBytes},
		{"compulsory (first requests)", r.Bound.CompulsoryBytes},
		{"no cache", r.Bound.TotalBytes},
		{"trace's demand fills", r.TraceFillBytes},
	}
	for _, p := range r.Policies {
		rows = append(rows, struct {
			name string
			b    int64
		}{p.Policy + " as one cache", p.OriginBytes})
	}
	for _, x := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", x.name, gb(x.b), ratio(x.b))
	}
	return tw.Flush()
}

// NewCommand returns the `bound` command: --trace FILE (CSV, "-" for
// stdin), --capacity BYTES (the cluster's total disk), --policies
// (comma-separated eviction policies, default all), --json.
func NewCommand() *cobra.Command {
	var trace, policies string
	var capacity int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bound",
		Short: "Offline lower bound on origin bytes for a request trace, and each eviction policy as one cache",
		Long: "Reads a request trace CSV (time_s,title,bytes,node,fill; as written by `vodcluster sim --trace-out`)\n" +
			"and prints the lower bound on the bytes any storage policy must fetch from the origin with a cache of\n" +
			"--capacity bytes (Belady's MIN for equal sizes, else FOO's interval LP relaxation), a feasible offline\n" +
			"schedule next to it, and what each eviction policy fetches run as one cache of that size.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if trace == "" || capacity <= 0 {
				return fmt.Errorf("bound: --trace and a positive --capacity are required")
			}
			in := cmd.InOrStdin()
			if trace != "-" {
				f, err := os.Open(trace)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			recs, err := bound.ReadCSV(in)
			if err != nil {
				return fmt.Errorf("%s: %w", trace, err)
			}
			var ps []string
			if policies != "" {
				ps = strings.Split(policies, ",")
			}
			res, err := Check(recs, capacity, ps)
			if err != nil {
				return err
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
	f.StringVar(&trace, "trace", "", "request trace CSV (\"-\" = stdin)")
	f.Int64Var(&capacity, "capacity", 0, "cache size in bytes: the cluster's total disk")
	f.StringVar(&policies, "policies", "", "eviction policies to replay, comma-separated (default all: "+strings.Join(smm.Evictors(), ",")+")")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
