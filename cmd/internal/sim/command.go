package sim

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"vodcluster/lsm"
	"vodcluster/smm"
)

// NewCommand returns `vodcluster sim`: run the scheduling policies on the
// same seeded demand and print their figures side by side (a table, or
// JSON with --json), optionally with a load plot (--plot) and the request
// trace (--trace-out) of one policy. Settings come from Default, then
// --config FILE.yaml, then the other flags.
func NewCommand() *cobra.Command {
	var (
		configFile, policy, policies, plotFile, traceFile string
		storages                                          string
		asJSON, asMarkdown                                bool
		nodes                                             int
	)
	cfg := Default()
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate a day of IPTV demand and compare the scheduling and storage policies",
		Long: `sim drives the real lsm scheduler and smm storage code on a virtual clock
through a seeded day of IPTV demand (Zipf titles, evening peak, early abandon,
new titles, node failures) and prints, per scheduling and storage policy, the
sessions requested, admitted and refused, QoS violations, peak-to-mean node
load at the peak hour, origin fetches and bytes, the offline lower bound on
origin bytes for the same served requests and the cluster's disk (each title
on disk while it plays) and the ratio to it, placement moves, peak CDP
transfers and decision times. --storage-policies all --policies lall,rr,wlc
is the side-by-side storage table. --trace-out writes the served requests as
CSV: ` + "`vodcluster bound --capacity <cluster disk bytes> FILE`" + ` recomputes the bound
from it (add --any-warm after --warmup-days).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := Default()
			if configFile != "" {
				if err := run.LoadFile(configFile); err != nil {
					return err
				}
			}
			if err := applyFlags(cmd, &run, &cfg, nodes); err != nil {
				return err
			}
			switch {
			case cmd.Flags().Changed("policies"):
				run.Policies = nil
				if policies != "all" {
					for _, p := range strings.Split(policies, ",") {
						if p = strings.TrimSpace(p); p != "" {
							run.Policies = append(run.Policies, p)
						}
					}
				}
			case policy != "":
				run.Policies = []string{policy}
			}
			if cmd.Flags().Changed("storage-policies") {
				run.StoragePolicies = nil
				if storages == "all" {
					run.StoragePolicies = smm.StoragePolicies()
				} else {
					for _, p := range strings.Split(storages, ",") {
						if p = strings.TrimSpace(p); p != "" {
							run.StoragePolicies = append(run.StoragePolicies, p)
						}
					}
				}
			}
			if err := run.Validate(); err != nil {
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
			for _, r := range rs {
				if r.Policy != focus || r.StoragePolicy != focusStorage {
					continue
				}
				if plotFile != "" {
					if err := writeFile(plotFile, func(f *os.File) error { return WriteSVG(f, r.Loads) }); err != nil {
						return err
					}
				}
				if traceFile != "" {
					if err := writeFile(traceFile, func(f *os.File) error { return WriteTraceCSV(f, r.Trace) }); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "YAML file with simulation settings (unknown keys are errors)")
	f.StringVar(&policy, "policy", "", "run only this policy, and use it for --plot and --trace-out (default lall)")
	f.StringVar(&policies, "policies", "all", "comma-separated policies to run, or all: "+strings.Join(lsm.Policies(), ","))
	f.BoolVar(&asJSON, "json", false, "print a JSON array, one object per policy")
	f.BoolVar(&asMarkdown, "markdown", false, "print a Markdown table")
	f.StringVar(&plotFile, "plot", "", "write an SVG of each node's load over time for the chosen policy")
	f.StringVar(&traceFile, "trace-out", "", "write the chosen policy's request trace as CSV (time_s,title,bytes,node,fill,end_s), with the first storage policy")
	f.StringVar(&storages, "storage-policies", "", "comma-separated storage policies to run each with every scheduling policy, or all: "+strings.Join(smm.StoragePolicies(), ","))
	f.IntVar(&cfg.WarmupDays, "warmup-days", cfg.WarmupDays, "days simulated before the figures start (below --days)")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed: same seed, same demand and results")
	f.IntVar(&cfg.Days, "days", cfg.Days, "simulated days")
	f.IntVar(&cfg.Demand.Subscribers, "subscribers", cfg.Demand.Subscribers, "subscribers")
	f.Float64Var(&cfg.Demand.SessionsPerSubscriber, "sessions-per-subscriber", cfg.Demand.SessionsPerSubscriber, "sessions a subscriber starts per day")
	f.IntVar(&cfg.Demand.Titles, "titles", cfg.Demand.Titles, "titles in the catalog at the start")
	f.Float64Var(&cfg.Demand.ZipfAlpha, "zipf", cfg.Demand.ZipfAlpha, "Zipf exponent of title popularity")
	f.IntVar(&cfg.Demand.NewTitlesPerDay, "new-titles", cfg.Demand.NewTitlesPerDay, "new titles a day")
	f.IntVar(&nodes, "nodes", 20, "nodes (the default classes' proportions are kept)")
	f.Float64Var(&cfg.Cluster.DiskShare, "disk-share", cfg.Cluster.DiskShare, "nodes' disks together as a share of the catalog's bytes")
	f.StringVar(&cfg.StoragePolicy, "storage", cfg.StoragePolicy, "storage policy (eviction policy of the node disks, with its planner): "+strings.Join(smm.StoragePolicies(), ","))
	f.IntVar(&cfg.CDP.Channels, "cdp-channels", cfg.CDP.Channels, "concurrent origin transfers")
	f.Int64Var(&cfg.CDP.ChannelBps, "cdp-channel-bps", cfg.CDP.ChannelBps, "bit/s per origin transfer")
	f.DurationVar(&cfg.CDP.SetupDelay, "cdp-setup", cfg.CDP.SetupDelay, "setup delay per origin transfer")
	f.Float64Var(&cfg.Failures.PerDay, "failures", cfg.Failures.PerDay, "node outages per day")
	f.Float64Var(&cfg.Scheduler.A, "load-a", lsm.DefaultConfig().A, "lall: weight a of a session served from a fill")
	f.Float64Var(&cfg.Scheduler.B, "load-b", lsm.DefaultConfig().B, "lall: overload penalty b")
	f.Float64Var(&cfg.Scheduler.DiskPressure, "disk-pressure", lsm.DefaultConfig().DiskPressure, "lall: charge for a fill per unit of disk in use")
	f.Float64Var(&cfg.Scheduler.Normal, "normal", lsm.DefaultConfig().Normal, "normal utilization limit Ul")
	f.Float64Var(&cfg.Scheduler.CHBLFactor, "chbl-factor", lsm.DefaultConfig().CHBLFactor, "chbl balance factor")
	return cmd
}

// applyFlags copies the flags the user set from flagged into run.
func applyFlags(cmd *cobra.Command, run, flagged *Config, nodes int) error {
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
	set("cdp-setup", func() { run.CDP.SetupDelay = flagged.CDP.SetupDelay })
	set("failures", func() { run.Failures.PerDay = flagged.Failures.PerDay })
	set("load-a", func() { run.Scheduler.A = flagged.Scheduler.A })
	set("load-b", func() { run.Scheduler.B = flagged.Scheduler.B })
	set("disk-pressure", func() { run.Scheduler.DiskPressure = flagged.Scheduler.DiskPressure })
	set("normal", func() { run.Scheduler.Normal = flagged.Scheduler.Normal })
	set("chbl-factor", func() { run.Scheduler.CHBLFactor = flagged.Scheduler.CHBLFactor })
	if cmd.Flags().Changed("nodes") {
		return run.SetNodes(nodes)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
