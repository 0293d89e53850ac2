package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFileRangeErrorsAtTheirLine: a --config file's number (or
// name) out of range was refused without its line and, for most, without
// the key as the file writes it ("sim: days 70 out of 1..60", "title kind
// \"a\": need share > 0 and bitrate_bps > 0", "sites 99 out of 0..64",
// "scheduler normal 1.5: must be in (0, 1]"), while a duration's said
// "--config FILE: line N: KEY VALUE: reason". Every range error of a
// value from the file now says it so, the value as written (-0.50, not
// -0.5), in a list of sections at the item's line; a value a flag gave is
// named by its key and flag, without a line.
func TestConfigFileRangeErrorsAtTheirLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	for _, c := range []struct{ yaml, want string }{
		{"seed: 3\ndays: 70\n", "line 2: days 70: out of 1..60"},
		{"days: 2\nwarmup_days: 2\n", "line 2: warmup_days 2: out of 0..days-1 (days 2)"},
		{"demand:\n  subscribers: 0\n", "line 2: demand.subscribers 0: must be >= 1"},
		{"demand:\n  zipf_alpha: 3.50\n", "line 2: demand.zipf_alpha (--zipf) 3.50: out of [0, 3]"},
		{"demand:\n  sessions_per_subscriber: .nan\n", "line 2: demand.sessions_per_subscriber .nan: out of (0, 100]"},
		{"demand:\n  hourly: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,\n    1, 1, 1, 1, 1, -2, 1, 1, 1, 1, 1, 1]\n", "line 3: demand.hourly -2 (hour 17): must be >= 0"},
		{"demand:\n  kinds:\n    - {name: a, share: 1, bitrate_bps: 1000000, min_duration: 1h, max_duration: 2h}\n    - {name: b, share: -0.50, bitrate_bps: 1000000, min_duration: 1h, max_duration: 2h}\n", "line 4: demand.kinds[].share -0.50 (title kind \"b\"): must be > 0"},
		{"demand:\n  kinds:\n    - name: a\n      share: 1\n      bitrate_bps: 0\n      min_duration: 1h\n      max_duration: 2h\n", "line 5: demand.kinds[].bitrate_bps 0 (title kind \"a\"): must be > 0"},
		{"cluster:\n  nodes:\n    - {count: 1, egress_bps: 1000000000, disk_weight: 1, weight: 70000}\n", "line 3: cluster.nodes[].weight 70000 (node class): out of 0..65535"},
		{"cluster:\n  disk_share: 1.5\n", "line 2: cluster.disk_share 1.5: out of (0, 1]"},
		{"cdp:\n  channels: 0\n", "line 2: cdp.channels (--cdp-channels) 0: out of 1..100000"},
		{"failures:\n  per_day: 1e4\n", "line 2: failures.per_day (--failures) 1e4: out of [0, 1000]"},
		{"sites:\n  count: 99\n", "line 2: sites.count (--sites) 99: out of 0..64"},
		{"sites:\n  count: 2\n  local: 2\n", "line 3: sites.local (--site-local) 2: out of [0, 1]"},
		{"sites:\n  count: 2\n  aware: [all, bogus]\n", "line 3: sites.aware (--site-aware) bogus: unknown site awareness"},
		{"scheduler:\n  normal: 1.5\n", "line 2: scheduler.normal 1.5: must be in (0, 1]"},
		{"scheduler:\n  origin_channels: -1\n", "line 2: scheduler.origin_channels (--lsm-origin-channels) -1: must be >= 0"},
		{"policies:\n  - lall\n  - nope\n", "line 3: policies nope: unknown policy"},
	} {
		os.WriteFile(p, []byte(c.yaml), 0o644)
		_, err := runCommand("--config", p, "--print-config")
		want := "--config " + p + ": " + c.want
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v\nwant %q", c.yaml, err, want)
		}
	}
	// A value given by a flag: its key and flag, no line (the file's
	// other values are good).
	os.WriteFile(p, []byte("seed: 3\ndays: 2\n"), 0o644)
	for args, want := range map[string]string{
		"--days 70":         "sim: days 70: out of 1..60",
		"--subscribers 0":   "sim: demand.subscribers 0: must be >= 1",
		"--site-local 2":    "sim: sites.local (--site-local) 2: out of [0, 1]",
		"--cdp-channels -3": "sim: cdp.channels (--cdp-channels) -3: out of 1..100000",
	} {
		_, err := runCommand(append([]string{"--config", p, "--sites", "2", "--print-config"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "line ") || strings.Contains(err.Error(), "--config") {
			t.Errorf("%s: %v, want %q without a line", args, err, want)
		}
	}
}

// TestConfigFileRangeErrorAtTheItem: a list's item out of range was shown
// at the first item with the same value, another item's line: the second
// "all" of sites.aware (given twice) at the first one's, title kind b's
// max_duration 2h (below its min_duration) at kind a's line. The item
// out of range is shown at its own line.
func TestConfigFileRangeErrorAtTheItem(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	kinds := "demand:\n  kinds:\n    - {name: a, share: 1, bitrate_bps: 1000000, min_duration: 1h, max_duration: %s}\n    - {name: b, share: 1, bitrate_bps: 1000000, min_duration: %s, max_duration: %s}\n"
	for _, c := range []struct{ yaml, want string }{
		{"sites:\n  count: 2\n  aware:\n    - all\n    - scheduler\n    - all\n", "line 6: sites.aware (--site-aware) all: site awareness given twice"},
		{fmt.Sprintf(kinds, "2h", "3h", "2h"), "line 4: demand.kinds[].max_duration 2h (title kind \"b\")"},
		{fmt.Sprintf(kinds, "1d", "2d", "1d"), "line 4: demand.kinds[].min_duration 2d (title kind \"b\")"},
		{"cluster:\n  nodes:\n    - &n {count: 1, egress_bps: 1000000000, disk_weight: 1, weight: 5}\n    - {<<: *n, weight: 70000}\n", "line 4: cluster.nodes[].weight 70000"},
		{"cluster:\n  nodes:\n    - {count: 1, egress_bps: 1000000000, disk_weight: 1, weight: 0}\n    - {count: 1, egress_bps: 1000000000, disk_weight: 1, weight: 0}\n", ""},
	} {
		os.WriteFile(p, []byte(c.yaml), 0o644)
		_, err := runCommand("--config", p, "--print-config")
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.yaml, err)
			}
			continue
		}
		want := "--config " + p + ": " + c.want
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v\nwant %q", c.yaml, err, want)
		}
	}
}

// TestConfigFlagWinsOverFileRange: a flag given with --config overrides
// the file (docs/scheduling.md), but the file was checked alone first: a
// file's days: 70 was refused with --days 5, and with --days 70 the error
// named the file's line for the flag's value. The flags now overlay the
// file before the check, a value a flag gave is named by its flag without
// a line, one the file gave at its line.
func TestConfigFlagWinsOverFileRange(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	for _, c := range []struct {
		yaml, args, want string
	}{
		{"days: 70\n", "--days 5", ""},
		{"days: 3\nwarmup_days: 5\n", "--days 10", ""},
		{"cdp:\n  setup_delay: 2d\n", "--cdp-setup 1m", ""},
		{"policies: [nope]\n", "--policies lall", ""},
		{"scheduler:\n  normal: 1.5\n", "--normal 0.5", ""},
		{"days: 70\n", "--days 70", "sim: days 70: out of 1..60"},
		{"demand:\n  zipf_alpha: 4\n", "--zipf 4", "sim: demand.zipf_alpha (--zipf) 4: out of [0, 3]"},
		{"scheduler:\n  normal: 1.5\n", "--normal 1.5", "sim: scheduler.normal 1.5: must be in (0, 1]"},
		// The file's own value stays at its line.
		{"days: 10\nwarmup_days: 5\n", "--days 3", "sim: --config " + p + ": line 2: warmup_days 5: out of 0..days-1 (days 3)"},
		{"cluster:\n  nodes:\n    - {count: 1, egress_bps: 1000000000, disk_weight: 1, weight: 70000}\n", "--nodes 2", "sim: --config " + p + ": line 3: cluster.nodes[].weight 70000"},
		{"cluster:\n  nodes:\n    - {count: -1, egress_bps: 1000000000, disk_weight: 1}\n    - {count: 2, egress_bps: 1000000000, disk_weight: 1}\n", "--nodes 2", "sim: --config " + p + ": line 3: cluster.nodes[].count (--nodes) -1 (node class): must be >= 0"},
		{"demand:\n  subscribers: 1000000\n  sessions_per_subscriber: 100\n", "--seed 2", "sim: --config " + p + ": line 2: demand.subscribers 1000000, line 3: demand.sessions_per_subscriber 100, days 1: more than 20 million sessions"},
	} {
		os.WriteFile(p, []byte(c.yaml), 0o644)
		_, err := runCommand(append([]string{"--config", p, "--print-config"}, strings.Fields(c.args)...)...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %s: %v, want the flag to win", c.yaml, c.args, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%q %s: %v\nwant %q", c.yaml, c.args, err, c.want)
		}
	}
}

// TestConfigFileRuleOverSeveralValuesAtTheirLines: the rules over several
// values (more than 20 million sessions, the node count) named no value
// and no line ("--config FILE: more than 20 million sessions in the
// run", "--config FILE: 12000 nodes out of 1..10000"), the operator left
// to guess which keys; they now name each value the rule is about, the
// file's at its line, a flag's by its key without one.
func TestConfigFileRuleOverSeveralValuesAtTheirLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	two := "cluster:\n  nodes:\n    - {count: 6000, egress_bps: 1000000000, disk_weight: 1}\n    - {count: %d, egress_bps: 1000000000, disk_weight: 1}\n"
	for _, c := range []struct {
		yaml, args, want string
	}{
		{"days: 2\ndemand:\n  subscribers: 1000000\n  sessions_per_subscriber: 20\n", "",
			"sim: --config " + p + ": line 3: demand.subscribers 1000000, line 4: demand.sessions_per_subscriber 20, line 1: days 2: more than 20 million sessions in the run (40000000)"},
		{"demand:\n  subscribers: 1000000\n  sessions_per_subscriber: 10\n", "--days 3",
			"sim: --config " + p + ": line 2: demand.subscribers 1000000, line 3: demand.sessions_per_subscriber 10, days 3: more than 20 million sessions"},
		{"days: 3\n", "--subscribers 10000000 --sessions-per-subscriber 1",
			"sim: --config " + p + ": demand.subscribers 10000000, demand.sessions_per_subscriber 1, line 1: days 3: more than 20 million sessions"},
		{"seed: 2\n", "--subscribers 10000000 --sessions-per-subscriber 1 --days 3",
			"sim: demand.subscribers 10000000, demand.sessions_per_subscriber 1, days 3: more than 20 million sessions"},
		{fmt.Sprintf(two, 6000), "", "sim: --config " + p + ": line 3: cluster.nodes[].count (--nodes) 6000, line 4: cluster.nodes[].count (--nodes) 6000: 12000 nodes out of 1..10000"},
		// lsm's own rules over two of the scheduler's values.
		{"scheduler:\n  overload: 0.50\n", "", "sim: --config " + p + ": line 2: scheduler.overload 0.50: lsm: overload threshold 0.5 below the normal utilization limit 0.8"},
		{"scheduler:\n  lard_low: 0.9\n  lard_high: 0.5\n", "", "sim: --config " + p + ": line 2: scheduler.lard_low 0.9, line 3: scheduler.lard_high 0.5: lsm: lard thresholds"},
		{"scheduler:\n  overload: 0.92\n", "--normal 0.95", "sim: --config " + p + ": scheduler.normal 0.95, line 2: scheduler.overload 0.92: lsm: overload threshold"},
		{"cluster:\n  nodes:\n    - {count: 0, egress_bps: 1000000000, disk_weight: 1}\n", "", "sim: --config " + p + ": line 3: cluster.nodes[].count (--nodes) 0: 0 nodes out of 1..10000"},
	} {
		os.WriteFile(p, []byte(c.yaml), 0o644)
		_, err := runCommand(append([]string{"--config", p, "--print-config"}, strings.Fields(c.args)...)...)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q %s: %v\nwant %q", c.yaml, c.args, err, c.want)
		}
	}
}
