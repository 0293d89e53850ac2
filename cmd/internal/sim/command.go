package sim

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"vodcluster/cmd/internal/durflag"
	"vodcluster/cmd/internal/fileflag"
	"vodcluster/cmd/internal/yamlcfg"
	"vodcluster/lsm"
	"vodcluster/smm"
)

// NewCommand returns `vodcluster sim`: run the scheduling policies on the
// same seeded demand and print their figures side by side (a table, or
// JSON with --json), optionally with a load plot (--plot) and the request
// trace (--trace-out) of one policy. Settings come from Default, then
// --config FILE.yaml, then the other flags; --print-config prints them as
// YAML instead of running.
func NewCommand() *cobra.Command {
	var (
		configFile, policy, policies, plotFile, traceFile string
		storages, siteAware                               string
		asJSON, asMarkdown, printConfig, largeCatalog     bool
		rf                                                runFlags
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate a day of IPTV demand and compare the scheduling and storage policies",
		Long: `sim drives the real lsm scheduler and smm storage code on a virtual clock
through a seeded day of IPTV demand (Zipf titles, evening peak, early abandon,
new titles, node failures) and prints, per scheduling and storage policy, the
sessions requested, admitted and refused, QoS violations, peak-to-mean node
load at the peak hour, origin fetches and bytes, the offline lower bound on
origin bytes for the same served requests and the cluster's disk (each title
on disk while it plays, but for a fill the admission filter streams through
unkept: an instant) and the ratio to it, placement moves, peak CDP
transfers and decision times. --storage-policies all --policies lall,rr,wlc
is the side-by-side storage table. --trace-out writes the requests as CSV,
one row per placement (a viewer resumed after a node failure has two) and
one per refusal (node -1): ` + "`vodcluster bound --capacity <cluster disk bytes> FILE`" + `
recomputes the bound from the served rows (add --any-warm after
--warmup-days). --sites N splits nodes and viewers over N sites, each with
its own taste (--site-local) and adds the sessions and bytes served across
sites; --site-aware all,scheduler,none runs the same demand with the
scheduler and planner told the sites, the scheduler only, and neither.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := Default()
			var file *yamlcfg.File
			var fileErr error // the file's values alone out of range: a flag may set them
			if configFile != "" {
				var err error
				if file, err = run.loadFile(configFile); err != nil {
					return fmt.Errorf("sim: %w", fileflag.Error("config", configFile, err))
				}
				fileErr = run.validate(fileShow(file))
				if cmd.Flags().Changed("nodes") { // scales the file's counts: a negative one first
					for i, n := range run.Cluster.Nodes {
						if n.Count < 0 {
							err := fmt.Errorf("sim: %s (node class): must be >= 0", fileShow(file)(fmt.Sprintf("cluster.nodes[%d].count", i), n.Count))
							return fmt.Errorf("sim: %w", fileflag.Error("config", configFile, fileValuesError(configFile, err)))
						}
					}
				}
			}
			if err := rf.apply(cmd, &run); err != nil {
				return err
			}
			var err error
			switch {
			case cmd.Flags().Changed("policies"):
				run.Policies = nil
				if policies != "all" {
					if run.Policies, err = splitList("policies", policies); err != nil {
						return err
					}
				}
			case policy != "":
				run.Policies = []string{policy}
			}
			if cmd.Flags().Changed("storage-policies") {
				run.StoragePolicies = smm.StoragePolicies()
				if storages != "all" {
					if run.StoragePolicies, err = splitList("storage-policies", storages); err != nil {
						return err
					}
				}
			}
			if err := checkPolicyFlags(cmd, policy, &run); err != nil {
				return err
			}
			if cmd.Flags().Changed("site-aware") {
				if run.Sites.Aware, err = splitList("site-aware", siteAware); err != nil {
					return err
				}
			}
			if err := needSites(cmd, &run); err != nil {
				return err
			}
			if inFile, err := rf.validate(cmd, &run, file); err != nil {
				// A value the file gave, or a rule over several values
				// (no value shown) that the file alone breaks the same way.
				if inFile || (fileErr != nil && fileErr.Error() == err.Error()) {
					return fmt.Errorf("sim: %w", fileflag.Error("config", configFile, fileValuesError(configFile, err)))
				}
				return err
			}
			if printConfig {
				return WriteConfig(cmd.OutOrStdout(), run)
			}
			if err := checkCatalog(&run, largeCatalog); err != nil {
				return err
			}
			focus := policy
			if focus == "" {
				focus = lsm.DefaultPolicy
				if ps := run.policies(); !contains(ps, focus) {
					focus = ps[0]
				}
			}
			if (plotFile != "" || traceFile != "") && !contains(run.policies(), focus) {
				return fmt.Errorf("sim: policy %q for --plot/--trace-out is not among those run", focus)
			}
			focusStorage := run.storagePolicies()[0]
			// The output files are created before the runs, so a path that
			// cannot be written fails at once rather than after them.
			plot, err := createOutput(plotFile)
			if err != nil {
				return fmt.Errorf("sim: %w", fileflag.Error("plot", plotFile, err))
			}
			defer plot.discard()
			trace, err := createOutput(traceFile)
			if err != nil {
				return fmt.Errorf("sim: %w", fileflag.Error("trace-out", traceFile, err))
			}
			defer trace.discard()
			rs, err := Run(run)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				err = WriteJSON(out, rs)
			case asMarkdown:
				err = WriteMarkdown(out, rs)
			default:
				err = WriteTable(out, rs)
			}
			if err != nil {
				return err
			}
			warned := map[string]bool{}
			for _, r := range rs {
				for _, w := range r.Warnings {
					if !warned[w] {
						warned[w] = true
						fmt.Fprintf(cmd.ErrOrStderr(), "sim: warning: %s\n", w)
					}
				}
			}
			for _, r := range rs {
				if r.Policy != focus || r.StoragePolicy != focusStorage {
					continue
				}
				if err := plot.write(func(f *os.File) error { return WriteSVG(f, r.Loads) }); err != nil {
					return fmt.Errorf("sim: %w", fileflag.Error("plot", plotFile, err))
				}
				if err := trace.write(func(f *os.File) error { return WriteTraceCSV(f, r.Trace) }); err != nil {
					return fmt.Errorf("sim: %w", fileflag.Error("trace-out", traceFile, err))
				}
				if traceFile != "" {
					// Its rows are more than the requests when node
					// failures cut sessions that resumed elsewhere:
					// `vodcluster bound` counts rows.
					fmt.Fprintf(cmd.ErrOrStderr(), "trace: %d rows in %s: %d requests and %d playbacks resumed after a node failure\n",
						len(r.Trace), traceFile, r.Requested, r.Resumed)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "YAML file with simulation settings (unknown keys are errors; --print-config writes every key; flags override the file)")
	f.BoolVar(&printConfig, "print-config", false, "print the configuration as YAML (every key; the defaults, with --config and the other flags applied) and exit: a file for --config")
	f.StringVar(&policy, "policy", "", "run only this policy, and use it for --plot and --trace-out (default lall)")
	f.StringVar(&policies, "policies", "all", "comma-separated policies to run, or all: "+strings.Join(lsm.Policies(), ","))
	f.BoolVar(&asJSON, "json", false, "print a JSON array, one object per policy")
	f.BoolVar(&asMarkdown, "markdown", false, "print a Markdown table")
	f.StringVar(&plotFile, "plot", "", "write an SVG of each node's load over time for the chosen policy")
	f.StringVar(&traceFile, "trace-out", "", "write the chosen policy's request trace as CSV (time_s,title,bytes,node,fill,end_s), with the first storage policy (and the first --site-aware)")
	f.StringVar(&storages, "storage-policies", "", "comma-separated storage policies to run each with every scheduling policy, or all: "+strings.Join(smm.StoragePolicies(), ","))
	f.StringVar(&siteAware, "site-aware", SiteAwareAll, "with --sites: comma-separated runs by what knows the sites: all (scheduler and planner), scheduler (scheduler only), none")
	f.BoolVar(&largeCatalog, "large-catalog", false, fmt.Sprintf("run a catalog above %d titles at the end (titles + new titles a day × days), which takes minutes and hundreds of MB per policy run", maxCatalog))
	rf.bind(cmd)
	return cmd
}

// maxCatalog is the largest catalog (titles at the end of the run) sim
// runs without --large-catalog: each plan round (every plan_interval, 288
// a day) goes over the whole catalog, and every run (one per scheduling
// and storage policy, and site-aware setting: 16 by default) makes it
// anew. 1,000,000 titles, which Validate allows, took more than 6
// minutes and 550 MB per run (lall alone), the default 16 runs well over
// an hour, without a word before the results; 50,000 took 25 s, 5,000
// (the default) 7 s.
const maxCatalog = 100_000

// checkCatalog refuses a run whose catalog grows above maxCatalog unless
// large (--large-catalog) allows it, saying why and how to go on.
func checkCatalog(run *Config, large bool) error {
	d := run.Demand
	end := d.Titles + d.NewTitlesPerDay*run.Days
	if large || end <= maxCatalog {
		return nil
	}
	pols, stors, aware := len(run.policies()), len(run.storagePolicies()), len(run.Sites.aware())
	runs := pols * stors * aware
	what := "scheduling × storage policies"
	if aware > 1 {
		what += " × site-aware settings"
	}
	// What to give for one run: only the settings that make more than one.
	var one []string
	for _, f := range []struct {
		n    int
		flag string
	}{{pols, "--policies NAME"}, {stors, "--storage-policies NAME"}, {aware, "--site-aware NAME"}} {
		if f.n > 1 {
			one = append(one, f.flag)
		}
	}
	hint, made := "", "1 run"
	if len(one) > 0 {
		hint = " (" + strings.Join(one, ", ") + " for one run)"
		made = fmt.Sprintf("%d runs", runs)
	}
	size := fmt.Sprintf("titles %d", d.Titles)
	if d.NewTitlesPerDay > 0 {
		days := "days"
		if run.Days == 1 {
			days = "day"
		}
		size = fmt.Sprintf("titles %d + new titles %d a day × %d %s", d.Titles, d.NewTitlesPerDay, run.Days, days)
	}
	return fmt.Errorf("sim: a catalog of %d titles (%s) is above %d: every plan round goes over the whole catalog, "+
		"which takes minutes and hundreds of MB per run at that size (a single run of 1000000 titles: more than 6 minutes and 550 MB; 50000: 25 s), "+
		"and this makes %s (%s); give --large-catalog to run it anyway%s",
		end, size, maxCatalog, made, what, hint)
}

// runFlags are the flags that change the simulation's settings. Each is
// copied into the run's Config only when it was given, over Default and
// the --config file; a value given as 0 means 0.
type runFlags struct {
	cfg      Config // flagged values of the plain settings
	nodes    int
	cdpSetup durflag.Value // --cdp-setup (takes days, as every duration flag)
	sp       schedFlags
}

// schedFlags are the scheduler flags, set into Config.Scheduler only when
// given.
type schedFlags struct {
	a, b, diskPressure, normal, overload, chbl float64
	fillRef                                    int64
	slowStart                                  durflag.Value // takes days, as every duration flag
	originChannels                             int
}

// bind declares the flags on cmd.
func (rf *runFlags) bind(cmd *cobra.Command) {
	rf.cfg = Default()
	cfg, sp, f := &rf.cfg, &rf.sp, cmd.Flags()
	f.IntVar(&cfg.WarmupDays, "warmup-days", cfg.WarmupDays, "days simulated before the figures start (below --days)")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed: same seed, same demand and results")
	f.IntVar(&cfg.Days, "days", cfg.Days, "simulated days")
	f.IntVar(&cfg.Demand.Subscribers, "subscribers", cfg.Demand.Subscribers, "subscribers")
	f.Float64Var(&cfg.Demand.SessionsPerSubscriber, "sessions-per-subscriber", cfg.Demand.SessionsPerSubscriber, "sessions a subscriber starts per day")
	f.IntVar(&cfg.Demand.Titles, "titles", cfg.Demand.Titles, "titles in the catalog at the start")
	f.Float64Var(&cfg.Demand.ZipfAlpha, "zipf", cfg.Demand.ZipfAlpha, "Zipf exponent of title popularity")
	f.IntVar(&cfg.Demand.NewTitlesPerDay, "new-titles", cfg.Demand.NewTitlesPerDay, "new titles a day")
	f.IntVar(&rf.nodes, "nodes", 20, "nodes (the default classes' proportions are kept)")
	f.Float64Var(&cfg.Cluster.DiskShare, "disk-share", cfg.Cluster.DiskShare, "nodes' disks together as a share of the catalog's bytes")
	f.StringVar(&cfg.StoragePolicy, "storage", cfg.StoragePolicy, "storage policy (eviction policy of the node disks, with its planner): "+strings.Join(smm.StoragePolicies(), ","))
	f.IntVar(&cfg.CDP.Channels, "cdp-channels", cfg.CDP.Channels, "concurrent origin transfers")
	f.Int64Var(&cfg.CDP.ChannelBps, "cdp-channel-bps", cfg.CDP.ChannelBps, "bit/s per origin transfer")
	rf.cdpSetup = durflag.Value{D: cfg.CDP.SetupDelay}
	f.Var(&rf.cdpSetup, "cdp-setup", "setup delay per origin transfer")
	f.Float64Var(&cfg.Failures.PerDay, "failures", cfg.Failures.PerDay, "node outages per day")
	f.IntVar(&cfg.Sites.Count, "sites", cfg.Sites.Count, "sites: nodes round robin and subscribers (by number) split over site-1..site-N; 0 or 1: none")
	f.Float64Var(&cfg.Sites.Local, "site-local", cfg.Sites.Local, "with --sites: share of each site's requests that follow the site's own title ranking")
	f.BoolVar(&cfg.Sites.Only, "site-only", cfg.Sites.Only, "with --sites: keep viewers to their site's nodes (refused rather than served across sites)")
	d := lsm.DefaultConfig()
	f.Float64Var(&sp.a, "load-a", d.A, "lall: weight a of a session served from a fill (0 allowed)")
	f.Float64Var(&sp.b, "load-b", d.B, "lall: overload penalty b (0 allowed)")
	f.Float64Var(&sp.diskPressure, "disk-pressure", d.DiskPressure, "lall: charge for a fill per unit of disk in use (0 allowed)")
	f.Int64Var(&sp.fillRef, "fill-ref-bps", d.FillRefBps, "lall: reference session of the fill charge, bit/s")
	f.Float64Var(&sp.normal, "normal", d.Normal, "normal utilization limit Ul")
	f.Float64Var(&sp.overload, "overload", d.Overload, "utilization above which the locality policies pass over a title's holder")
	sp.slowStart = durflag.Value{D: d.SlowStart}
	f.Var(&sp.slowStart, "slow-start", "ramp window of a node that returns (0: off)")
	f.IntVar(&sp.originChannels, "lsm-origin-channels", 0, "origin channels lsm is told of (default: --cdp-channels; 0: lall ignores the origin)")
	f.Float64Var(&sp.chbl, "chbl-factor", d.CHBLFactor, "chbl balance factor")
}

// apply copies the flags given on cmd into run.
func (rf *runFlags) apply(cmd *cobra.Command, run *Config) error {
	flagged, sp := &rf.cfg, &rf.sp
	set := func(name string, apply func()) {
		if cmd.Flags().Changed(name) {
			apply()
		}
	}
	set("seed", func() { run.Seed = flagged.Seed })
	set("days", func() { run.Days = flagged.Days })
	set("warmup-days", func() { run.WarmupDays = flagged.WarmupDays })
	set("subscribers", func() { run.Demand.Subscribers = flagged.Demand.Subscribers })
	set("sessions-per-subscriber", func() { run.Demand.SessionsPerSubscriber = flagged.Demand.SessionsPerSubscriber })
	set("titles", func() { run.Demand.Titles = flagged.Demand.Titles })
	set("zipf", func() { run.Demand.ZipfAlpha = flagged.Demand.ZipfAlpha })
	set("new-titles", func() { run.Demand.NewTitlesPerDay = flagged.Demand.NewTitlesPerDay })
	set("disk-share", func() { run.Cluster.DiskShare = flagged.Cluster.DiskShare })
	set("storage", func() { run.StoragePolicy = flagged.StoragePolicy })
	set("cdp-channels", func() { run.CDP.Channels = flagged.CDP.Channels })
	set("cdp-channel-bps", func() { run.CDP.ChannelBps = flagged.CDP.ChannelBps })
	set("cdp-setup", func() { run.CDP.SetupDelay = rf.cdpSetup.D })
	set("failures", func() { run.Failures.PerDay = flagged.Failures.PerDay })
	set("sites", func() { run.Sites.Count = flagged.Sites.Count })
	set("site-local", func() { run.Sites.Local = flagged.Sites.Local })
	set("site-only", func() { run.Sites.Only = flagged.Sites.Only })
	p := &run.Scheduler
	set("load-a", func() { p.A = &sp.a })
	set("load-b", func() { p.B = &sp.b })
	set("disk-pressure", func() { p.DiskPressure = &sp.diskPressure })
	set("fill-ref-bps", func() { p.FillRefBps = &sp.fillRef })
	set("normal", func() { p.Normal = &sp.normal })
	set("overload", func() { p.Overload = &sp.overload })
	set("slow-start", func() { p.SlowStart = &sp.slowStart.D })
	set("lsm-origin-channels", func() { p.OriginChannels = &sp.originChannels })
	set("chbl-factor", func() { p.CHBLFactor = &sp.chbl })
	if cmd.Flags().Changed("nodes") {
		return run.SetNodes(rf.nodes)
	}
	return nil
}

// validate validates run (Config.Validate) after the flags given on cmd
// overlaid file's values (file nil: no --config), so that a flag wins
// over the file. A value a flag gave is named by its key and flag,
// without a line, a duration as typed ("cdp.setup_delay (--cdp-setup)
// 1d", not 24h); one the file gave as the file writes it, at its line
// (File.Show), and inFile is then true (for a rule over several values,
// when one of them is the file's).
func (rf *runFlags) validate(cmd *cobra.Command, run *Config, file *yamlcfg.File) (inFile bool, err error) {
	typed := map[string]*durflag.Value{}
	for name, v := range map[string]*durflag.Value{"cdp-setup": &rf.cdpSetup, "slow-start": &rf.sp.slowStart} {
		if cmd.Flags().Changed(name) {
			typed[flagKeys[name]] = v
		}
	}
	flagged := func(key string) bool {
		for name, k := range flagKeys {
			if k == key && cmd.Flags().Changed(name) { // --nodes: the classes' counts
				return true
			}
		}
		return false
	}
	err = run.validate(func(path string, v any) string {
		key := unindexed(path)
		if !flagged(key) && file != nil {
			shown := file.Show(path, keyName(path), v)
			// Shown only for the error: a rule over several values
			// (showEach) is the file's when one of them is.
			inFile = inFile || strings.HasPrefix(shown, "line ")
			return shown
		}
		if d, ok := v.(time.Duration); ok {
			if t := typed[key]; t != nil && t.D == d {
				return keyName(path) + " " + t.String()
			}
		}
		return showPlain(path, v)
	})
	return inFile, err
}

// needSites refuses the flags that only mean something with sites
// (--site-aware, --site-only, --site-local) when run has none, from the
// flags or the --config file: they would be ignored.
func needSites(cmd *cobra.Command, run *Config) error {
	if run.Sites.on() {
		return nil
	}
	for _, name := range []string{"site-aware", "site-only", "site-local"} {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("sim: --%s needs sites: give --sites N (N >= 2), or sites.count >= 2 in the --config file (without sites it would be ignored)", name)
		}
	}
	return nil
}

// checkPolicyFlags refuses a scheduling or storage policy given by a flag
// that is not one, naming the flag given (--policy, not the --config key
// policies that both --policy and --policies set).
func checkPolicyFlags(cmd *cobra.Command, policy string, run *Config) error {
	switch {
	case cmd.Flags().Changed("policies"):
		for _, p := range run.Policies {
			if !contains(lsm.Policies(), p) {
				return fmt.Errorf("sim: --policies %s: unknown policy (known: %v)", p, lsm.Policies())
			}
		}
	case policy != "" && !contains(lsm.Policies(), policy):
		return fmt.Errorf("sim: --policy %s: unknown policy (known: %v)", policy, lsm.Policies())
	}
	var storages []string
	switch {
	case cmd.Flags().Changed("storage-policies"):
		storages = run.StoragePolicies
	case cmd.Flags().Changed("storage"):
		storages = []string{run.StoragePolicy}
	}
	for _, sp := range storages {
		if _, err := smm.NewStorage(sp, smm.StorageConfig{}); err != nil {
			name := "storage-policies"
			if !cmd.Flags().Changed(name) {
				name = "storage"
			}
			return fmt.Errorf("sim: --%s %s: %w", name, sp, err)
		}
	}
	return nil
}

// splitList returns the comma-separated names of flag name's value, or an
// error when it names none (an empty value is a mistake, not "all").
func splitList(name, value string) ([]string, error) {
	var list []string
	for _, v := range strings.Split(value, ",") {
		if v = strings.TrimSpace(v); v != "" && !contains(list, v) { // a name given twice runs once
			list = append(list, v)
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("sim: --%s %q names nothing", name, value)
	}
	return list, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// output is a file named by a flag, created before the runs; nil when the
// flag is not given.
type output struct {
	f    *os.File
	done bool
}

// createOutput creates path, or returns nil for "".
func createOutput(path string) (*output, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &output{f: f}, nil
}

// write fills the file with write and closes it; a nil output, or one
// written before (the first run of the chosen policies wins: several
// --site-aware settings run it once each), writes nothing.
func (o *output) write(write func(*os.File) error) error {
	if o == nil || o.done {
		return nil
	}
	o.done = true
	if err := write(o.f); err != nil {
		o.f.Close()
		return err
	}
	return o.f.Close()
}

// discard closes and removes a file never written (the runs failed).
func (o *output) discard() {
	if o == nil || o.done {
		return
	}
	o.f.Close()
	os.Remove(o.f.Name())
}
