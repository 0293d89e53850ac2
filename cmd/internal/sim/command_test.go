package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCommand runs `vodcluster sim` with args and returns its standard
// output and error.
func runCommand(args ...string) (string, error) {
	cmd := NewCommand()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as under the root command
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// An output file that cannot be created fails the command before the runs:
// nothing is printed, rather than the figures and then the error.
func TestCommandOutputFileCheckedFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "x")
	for _, flag := range []string{"--trace-out", "--plot"} {
		out, err := runCommand("--subscribers", "2000", "--titles", "100", "--nodes", "3", "--policies", "lall", flag, missing)
		if err == nil || !strings.Contains(err.Error(), "no such file") || out != "" {
			t.Fatalf("%s %s: err %v, printed %q", flag, missing, err, out)
		}
	}
	// A run that fails leaves no empty output file behind.
	trace := filepath.Join(t.TempDir(), "t.csv")
	if _, err := runCommand("--policies", "lall", "--cdp-channel-bps", "1000", "--trace-out", trace); err == nil {
		t.Fatal("a title above the channel rate accepted")
	}
	if _, err := os.Stat(trace); err == nil {
		t.Fatalf("%s left behind by a failed run", trace)
	}
}

// An empty list is an error, not every policy (or the default).
func TestCommandEmptyListsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--policies", ""}, {"--policies", " , "}, {"--storage-policies", ""}, {"--site-aware", ","},
	} {
		if _, err := runCommand(append(args, "--subscribers", "100")...); err == nil || !strings.Contains(err.Error(), "names nothing") {
			t.Fatalf("%q: %v", args, err)
		}
	}
}

// A policy named twice runs once: one row, not the same row twice.
func TestCommandListRepeatsRunOnce(t *testing.T) {
	out, err := runCommand("--subscribers", "2000", "--titles", "100", "--nodes", "3", "--policies", "lall, lall", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, `"policy": "lall"`); n != 1 {
		t.Fatalf("--policies lall,lall: %d runs of lall, want 1:\n%s", n, out)
	}
}

// With several --site-aware settings the trace is the first one's (the
// policy runs once per setting), as with several storage policies.
func TestCommandTraceOfTheFirstSiteAwareRun(t *testing.T) {
	dir := t.TempDir()
	both, first := filepath.Join(dir, "both.csv"), filepath.Join(dir, "first.csv")
	common := []string{"--subscribers", "5000", "--titles", "200", "--nodes", "4", "--sites", "2", "--policies", "lall"}
	if _, err := runCommand(append(common, "--site-aware", "all,none", "--trace-out", both)...); err != nil {
		t.Fatal(err)
	}
	if _, err := runCommand(append(common, "--site-aware", "all", "--trace-out", first)...); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(both)
	b, _ := os.ReadFile(first)
	if len(b) < 100 || !bytes.Equal(a, b) {
		t.Fatalf("trace of all,none (%d bytes) is not that of all (%d bytes)", len(a), len(b))
	}
}

// A catalog above maxCatalog titles at the end of the run is refused
// before it starts, saying why and what to give to run it anyway: sim
// --titles 1000000 ran for minutes per policy (hours for the default 16)
// with more than 580 MB, without a word. --print-config still prints it,
// and --large-catalog lets it run.
func TestCommandLargeCatalogRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--titles", "1000000"},
		{"--titles", "100001", "--policies", "lall"},
		{"--titles", "1000", "--new-titles", "50000", "--days", "2", "--policies", "lall"}, // 101000 at the end
	} {
		done := make(chan struct{})
		var out string
		var err error
		go func() {
			defer close(done)
			out, err = runCommand(args...)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: still running after 10 s", args)
		}
		if err == nil || !strings.Contains(err.Error(), "is above 100000") || !strings.Contains(err.Error(), "give --large-catalog") || out != "" {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	out, err := runCommand("--titles", "1000000", "--print-config")
	if err != nil || !strings.Contains(out, "titles: 1000000") {
		t.Fatalf("--print-config of 1000000 titles: %v\n%s", err, out)
	}
	run := Default()
	run.Demand.Titles = maxCatalog - run.Demand.NewTitlesPerDay*run.Days
	if err := checkCatalog(&run, false); err != nil {
		t.Fatalf("a catalog of %d titles at the end: %v", maxCatalog, err)
	}
	run.Demand.Titles++
	if err := checkCatalog(&run, false); err == nil {
		t.Fatalf("a catalog of %d titles at the end accepted", maxCatalog+1)
	}
	if err := checkCatalog(&run, true); err != nil {
		t.Fatalf("a catalog of %d titles with --large-catalog: %v", maxCatalog+1, err)
	}
}

// The refusal of a large catalog counts the runs by every setting that
// makes them and names, for one run, only the flags that make more than
// one: with one scheduling policy given it said "--policies NAME for one
// run" though that was one run, and with two storage policies or two
// site-aware settings it named only --policies.
func TestCommandLargeCatalogNamesWhatMakesTheRuns(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"--titles", "200000", "--policies", "lall"},
			"this makes 1 run (scheduling × storage policies); give --large-catalog to run it anyway", "for one run"},
		{[]string{"--titles", "200000", "--policies", "lall", "--storage-policies", "gdsf,lru"},
			"this makes 2 runs (scheduling × storage policies); give --large-catalog to run it anyway (--storage-policies NAME for one run)", "--policies NAME"},
		{[]string{"--titles", "200000", "--sites", "2", "--site-aware", "all,none", "--policies", "lall,rr"},
			"this makes 4 runs (scheduling × storage policies × site-aware settings); give --large-catalog to run it anyway (--policies NAME, --site-aware NAME for one run)", "--storage-policies"},
	} {
		out, err := runCommand(c.args...)
		if err == nil || !strings.HasSuffix(err.Error(), c.want) || strings.Contains(err.Error(), c.not) || out != "" {
			t.Errorf("%v: %v\n%s\nwant it to end in %q, without %q", c.args, err, out, c.want, c.not)
		}
	}
}

// --trace-out says how many rows it wrote and that they are the requests
// and the playbacks resumed after a node failure: `vodcluster bound`
// counts the rows ("100259 requests served of 100259") where the table
// said "requested 100178", and nothing told why.
func TestCommandTraceSaysItsRows(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.csv")
	cmd := NewCommand()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"--subscribers", "5000", "--titles", "200", "--nodes", "4", "--policies", "lall", "--failures", "20", "--trace-out", trace})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	rows := bytes.Count(b, []byte("\n")) - 1 // the header
	var n, requested, resumed int
	var file string
	if _, err := fmt.Sscanf(errOut.String(), "trace: %d rows in %s %d requests and %d playbacks resumed", &n, &file, &requested, &resumed); err != nil {
		t.Fatalf("standard error %q: %v", errOut.String(), err)
	}
	if n != rows || requested+resumed != rows || resumed == 0 {
		t.Fatalf("said %d rows (%d requests, %d resumed), the file has %d: %q", n, requested, resumed, rows, errOut.String())
	}
}

// A cluster whose largest disk holds no title of the catalog (as 10,000
// nodes sharing half of 10 titles' bytes; here 20 nodes sharing half of
// one title's) is warned about, saying why: it ran and refused every
// request, with no word of the cause.
func TestCommandDisksHoldingNoTitleWarned(t *testing.T) {
	cmd := NewCommand()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--nodes", "20", "--titles", "1", "--subscribers", "10", "--days", "1", "--policies", "lall", "--storage-policies", "gdsf"})
	err := cmd.Execute()
	out := stderr.String()
	if err != nil || !strings.Contains(stdout.String(), "lall") || strings.Count(out, "sim: warning: the largest node's disk") != 1 || !strings.Contains(out, "holds no title") || !strings.Contains(out, "20 nodes") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// A class of no node (count 0) has no disk: a large disk_weight on it
// does not hide that the nodes' disks hold no title.
func TestDisksHoldingNoTitleWithAnEmptyClass(t *testing.T) {
	c := small()
	c.Demand.Titles, c.Demand.NewTitlesPerDay, c.Demand.Subscribers = 1, 0, 10
	c.Policies = []string{"lall"}
	c.Cluster.Nodes = append(c.Cluster.Nodes, NodeClass{Count: 0, EgressBps: 1_000_000_000, DiskWeight: 100000})
	rs, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs[0].Warnings) != 1 || !strings.Contains(rs[0].Warnings[0], "holds no title") {
		t.Fatalf("warnings %q", rs[0].Warnings)
	}
}

// A policy that is not one is refused naming the flag that gave it: --policy
// foo was blamed on "policies" (the --config key), which the user never
// typed.
func TestCommandUnknownPolicyNamesItsFlag(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"--policy", "foo"}},
		{[]string{"--policies", "lall,foo"}},
		{[]string{"--storage", "foo"}},
		{[]string{"--storage-policies", "lru,foo"}},
	} {
		_, err := runCommand(tc.args...)
		want := "sim: " + tc.args[0] + " foo: "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "unknown") {
			t.Errorf("%q: %v; want an error beginning %q", tc.args, err, want)
		}
	}
}
