package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"vodcluster/smm"
)

// flagged returns the run settings after Default, an optional YAML file
// and args, as the command computes them.
func flagged(t *testing.T, yaml string, args ...string) (Config, error) {
	t.Helper()
	cmd := &cobra.Command{}
	var rf runFlags
	rf.bind(cmd)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	run := Default()
	if yaml != "" {
		p := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(p, []byte(yaml), 0o644)
		if err := run.LoadFile(p); err != nil {
			return run, err
		}
	}
	if err := rf.apply(cmd, &run); err != nil {
		return run, err
	}
	_, err := rf.validate(cmd, &run, nil)
	return run, err
}

// A scheduler parameter set to 0, by flag or YAML, is 0; one not set is
// lsm's default; 0 where lsm needs a positive value is an error.
func TestSchedulerParamsZeroMeansZero(t *testing.T) {
	run, err := flagged(t, "", "--load-a", "0", "--disk-pressure", "0", "--slow-start", "0", "--lsm-origin-channels", "0", "--overload", "0.85")
	if err != nil {
		t.Fatal(err)
	}
	l := run.lsmConfig("lall")
	if l.A != 0 || l.DiskPressure != 0 || l.SlowStart != 0 || l.OriginChannels != 0 || l.Overload != 0.85 || l.B != 1 {
		t.Fatalf("flags: a %v disk %v slow start %v origin %d overload %v b %v", l.A, l.DiskPressure, l.SlowStart, l.OriginChannels, l.Overload, l.B)
	}
	run, err = flagged(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if l := run.lsmConfig("lall"); l.A != 30 || l.DiskPressure != 0.05 || l.SlowStart != 30*time.Second || l.OriginChannels != 48 {
		t.Fatalf("defaults: %+v", l)
	}
	run, err = flagged(t, "scheduler:\n  a: 0\n  b: 0\n  slow_start: 0s\n  fill_ref_bps: 8000000\n", "--load-b", "2")
	if err != nil {
		t.Fatal(err)
	}
	if l := run.lsmConfig("lall"); l.A != 0 || l.B != 2 || l.SlowStart != 0 || l.FillRefBps != 8e6 {
		t.Fatalf("yaml then flags: a %v b %v slow start %v ref %d", l.A, l.B, l.SlowStart, l.FillRefBps)
	}
	for _, args := range [][]string{
		{"--normal", "0"}, {"--overload", "0"}, {"--chbl-factor", "1"}, {"--fill-ref-bps", "0"},
		{"--slow-start", "-1s"}, {"--lsm-origin-channels", "-1"}, {"--load-a", "-1"},
	} {
		if _, err := flagged(t, "", args...); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
	if _, err := flagged(t, "scheduler:\n  overload: 0\n"); err == nil || !strings.Contains(err.Error(), "overload") {
		t.Fatalf("yaml overload 0: %v", err)
	}
}

// refuseAll is an eviction policy whose admission filter keeps nothing
// that needs room: every such demand fill streams through.
type refuseAll struct {
	smm.LRU
	asked   int
	victims map[string]bool
}

func (r *refuseAll) Victims(items []smm.Item, need int64, now time.Time) ([]string, bool) {
	v, ok := r.LRU.Victims(items, need, now)
	for _, title := range v {
		r.victims[title] = true
	}
	return v, ok
}

func (r *refuseAll) Admit(string, int64, []smm.Item, time.Time) bool { r.asked++; return false }

// The simulator honours smm.Admitter: a demand fill the filter does not
// admit streams to its viewer, evicts nothing and is not kept, and lsm
// does not see it as a replica.
func TestFillsTheAdmissionFilterRefusesStreamThrough(t *testing.T) {
	c := small()
	c.StoragePolicy = "lru"
	d := generate(&c, 6)
	e, err := newEngine(&c, d, "lall")
	if err != nil {
		t.Fatal(err)
	}
	var filters []*refuseAll
	for _, n := range e.nodes {
		f := &refuseAll{victims: map[string]bool{}}
		n.evictor = f
		filters = append(filters, f)
	}
	r, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	checkStorage(t, r)
	asked := 0
	for i, f := range filters {
		asked += f.asked
		for title := range f.victims {
			if it := e.nodes[i].disk[e.byID[title]]; it == nil {
				t.Fatalf("node %d: %s, named as a victim of a refused fill, left the disk", i, title)
			}
		}
	}
	if asked == 0 || r.BypassedFills != int64(asked) {
		t.Fatalf("admission asked %d times, %d fills streamed through", asked, r.BypassedFills)
	}
	for i, n := range e.nodes {
		for ti := range n.disk {
			if _, ok := e.sched.Nodes[i].Holds(d.titles[ti].id); !ok {
				t.Fatalf("node %d holds %s, lsm does not know", i, d.titles[ti].id)
			}
		}
		if got := len(n.disk); got != e.sched.Nodes[i].Titles() {
			t.Fatalf("node %d: %d titles on disk, lsm sees %d", i, got, e.sched.Nodes[i].Titles())
		}
	}
	// w-tinylfu's own filter streams some fills through on the same day.
	c.StoragePolicy = "w-tinylfu"
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		checkStorage(t, r)
		if r.Policy == "lall" && r.BypassedFills == 0 {
			t.Fatal("w-tinylfu admitted every fill")
		}
	}
}

// A session whose fill streams through unkept (an admission filter's
// refusal) holds no disk room: the trace and the bound take it as an
// instant request. The residency bound assumed its title stayed on disk
// while it played, so with disks too small for the titles played at once
// the bound was infeasible (the run failed), and with larger ones it could
// exceed what the run fetched.
func TestBypassedSessionsAreInstantsForTheBound(t *testing.T) {
	c := small()
	c.StoragePolicy = "lru"
	c.Cluster.DiskShare = 0.1
	e, err := newEngine(&c, generate(&c, 6), "lall")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range e.nodes {
		n.evictor = &refuseAll{victims: map[string]bool{}}
	}
	r, err := e.run()
	if err != nil {
		t.Fatal(err)
	}
	checkStorage(t, r)
	instants := 0
	for _, tr := range r.Trace {
		if tr.Node >= 0 && tr.End == tr.T {
			instants++
		}
	}
	if r.BypassedFills == 0 || instants == 0 || int64(instants) > r.BypassedFills {
		t.Fatalf("%d fills streamed through, %d served rows that are instants", r.BypassedFills, instants)
	}
}

// The heavy-load case of docs/scheduling.md: the default demand at
// 320,000 subscribers (peak utilization about 0.92), and the same with
// disks of 90% of the catalog. lall degrades no worse than lard and lblc:
// it refuses no more sessions, and fetches no more from the origin.
func TestHeavyLoadLallDegradesGracefully(t *testing.T) {
	if testing.Short() {
		t.Skip("six simulated days of a loaded cluster")
	}
	for _, share := range []float64{0.5, 0.9} {
		c := Default()
		c.Demand.Subscribers = 320_000
		c.Cluster.DiskShare = share
		c.Policies = []string{"lall", "lard", "lblc"}
		rs, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		lall := rs[0]
		if lall.PeakUtilization < 0.85 {
			t.Fatalf("disk share %v: peak utilization %.3f: not a heavy load", share, lall.PeakUtilization)
		}
		for _, r := range rs {
			checkStorage(t, r)
			t.Logf("disk share %v: %-5s refused %4d, origin %.2f TB, peak/mean %.3f", share, r.Policy, r.Refused, float64(r.OriginBytes)/1e12, r.PeakToMean)
		}
		for _, r := range rs[1:] {
			if lall.Refused > r.Refused || lall.OriginBytes > r.OriginBytes {
				t.Errorf("disk share %v: lall refused %d, %d origin bytes; %s %d, %d", share, lall.Refused, lall.OriginBytes, r.Policy, r.Refused, r.OriginBytes)
			}
		}
	}
}

// TestDurationFlagsTakeDays: --cdp-setup and --slow-start took Go
// durations only ("invalid argument \"1d\"") where every other duration
// flag of vodcluster and vodctl takes days too (durflag).
func TestDurationFlagsTakeDays(t *testing.T) {
	run, err := flagged(t, "", "--slow-start", "1d12h", "--cdp-setup", "0d45s")
	if err != nil {
		t.Fatal(err)
	}
	if run.Scheduler.SlowStart == nil || *run.Scheduler.SlowStart != 36*time.Hour || run.CDP.SetupDelay != 45*time.Second {
		t.Fatalf("slow start %v, cdp setup %v: want 36h and 45s", run.Scheduler.SlowStart, run.CDP.SetupDelay)
	}
	if l := run.lsmConfig("lall"); l.SlowStart != 36*time.Hour {
		t.Fatalf("lsm slow start %v, want 36h", l.SlowStart)
	}
	run, err = flagged(t, "")
	if err != nil || run.Scheduler.SlowStart != nil || run.CDP.SetupDelay != Default().CDP.SetupDelay {
		t.Fatalf("not given: %v, slow start %v, cdp setup %v", err, run.Scheduler.SlowStart, run.CDP.SetupDelay)
	}
}

// TestDurationErrorsReadable: the simulator's refusals of a duration
// showed it in Go's form ("cdp setup_delay 48h0m0s", "slow_start
// -1h0m0s"); they show a flag's value as typed (--cdp-setup 1d: "1d",
// not "24h"), with the key and the flag, and a value given neither way
// without its zero units, and days beside a whole number of them, as
// durflag.Readable does for the commands.
func TestDurationErrorsReadable(t *testing.T) {
	for args, want := range map[string]string{
		"--cdp-setup 2d":     "cdp.setup_delay (--cdp-setup) 2d: out of [0, 1h]",
		"--cdp-setup 1d":     "cdp.setup_delay (--cdp-setup) 1d: out of [0, 1h]",
		"--slow-start -90m":  "scheduler.slow_start -90m: must be >= 0",
		"--cdp-setup 1h0m1s": "cdp.setup_delay (--cdp-setup) 1h0m1s: out of",
	} {
		_, err := flagged(t, "", strings.Fields(args)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
	c := Default()
	c.CDP.SetupDelay = 48 * time.Hour
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cdp.setup_delay (--cdp-setup) 48h (2 days): out of [0, 1h]") {
		t.Errorf("setup delay of 48h: %v", err)
	}
}
