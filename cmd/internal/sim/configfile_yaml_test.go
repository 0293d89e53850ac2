package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigFileDurationsInDays: the --config file's durations were read
// in Go's form only ("cannot unmarshal !!str `2d` into time.Duration",
// and a bare 0 refused the same way), while --cdp-setup and --slow-start,
// and the other commands' files, take days. They take days now, through
// an alias and a merge key, with a bare 0 as 0 (not the default), over
// Default's values.
func TestConfigFileDurationsInDays(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(p, []byte("plan_interval: &p 1d12h\nscheduler:\n  slow_start: 2d\n  queue_wait: 0\ncdp:\n  setup_delay: 0\n  <<: {fill_wait: 90s}\nfailures:\n  down_mean: *p\ndemand:\n  kinds:\n    - {name: long, share: 1, bitrate_bps: 4000000, min_duration: 1h, max_duration: 1d}\n"), 0o644)
	c := Default()
	if err := c.LoadFile(p); err != nil {
		t.Fatal(err)
	}
	if c.PlanInterval != 36*time.Hour || c.Scheduler.SlowStart == nil || *c.Scheduler.SlowStart != 48*time.Hour || c.Scheduler.QueueWait != 0 ||
		c.CDP.SetupDelay != 0 || c.CDP.FillWait != 90*time.Second || c.Failures.DownMean != 36*time.Hour ||
		len(c.Demand.Kinds) != 1 || c.Demand.Kinds[0].MaxLength != 24*time.Hour {
		t.Fatalf("durations in days: plan %v slow start %v queue wait %v setup %v fill wait %v down %v kinds %+v",
			c.PlanInterval, c.Scheduler.SlowStart, c.Scheduler.QueueWait, c.CDP.SetupDelay, c.CDP.FillWait, c.Failures.DownMean, c.Demand.Kinds)
	}
	if d := Default(); c.Demand.Subscribers != d.Demand.Subscribers || c.CDP.Channels != d.CDP.Channels {
		t.Fatalf("the keys left out lost their defaults: %+v", c)
	}
}

// TestConfigFileErrorsAsWritten: sim's --config errors named Go types
// and no key ("line 2: cannot unmarshal !!str `lots` into int"), showed a
// duration in Go's form without its line ("cdp setup_delay 2h0m0s"), and
// named neither the flag nor the file's key alone. They say "--config
// FILE: line N: KEY VALUE: reason" with the value as written (1d, not
// 24h), the key by its path with the flag that sets it where their names
// differ, as the other commands' --config files do.
func TestConfigFileErrorsAsWritten(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	for _, c := range []struct{ yaml, want string }{
		{"cdp:\n  setup_delay: 1d\n", "line 2: cdp.setup_delay (--cdp-setup) 1d: out of [0, 1h]: a viewer waits for it"},
		{"seed: 3\ncdp:\n  fill_wait: 1d1s\n", "line 3: cdp.fill_wait 1d1s: out of [0, 1h]"},
		{"cdp:\n  channels: 8\n  setup_delay: 1x\n", "line 3: cdp.setup_delay (--cdp-setup) 1x: not a duration: write it with its unit, like 60s, 5m, 3h or 7d (days)"},
		{"scheduler:\n  slow_start: &s -1d\nfailures:\n  down_mean: *s\n", "line 4: failures.down_mean -1d: must be > 0"}, // at the alias's line
		{"scheduler:\n  slow_start: -1d\n", "line 2: scheduler.slow_start -1d: must be >= 0"},
		{"failures:\n  down_mean: 30\n", "line 2: failures.down_mean 30: not a duration"},
		{"sample_interval: 106752d\n", "line 1: sample_interval 106752d: too long: at most 106751 days"},
		{"plan_interval: 0\n", "line 1: plan_interval 0: must be > 0"},
		{"demand:\n  early_abandon_mean: -1d\n", "line 2: demand.early_abandon_mean -1d: must be > 0"},
		{"cdp:\n  channels: lots\n", "line 2: `lots` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key cdp.channels (--cdp-channels))"},
		{"demand:\n  zipf_alpha: high\n", "line 2: `high` is not a number (key demand.zipf_alpha (--zipf))"},
		{"demand:\n  hourly: [1, lots, 2]\n", "line 2: `lots` is not a number (key demand.hourly)"},
		{"failures:\n  keep_disk: maybe\n", "line 2: `maybe` is not true or false (key failures.keep_disk)"},
		{"cluster:\n  nodes:\n    - {count: 2, egress_bps: 1G, disk_weight: 1}\n", "line 3: `1G` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key cluster.nodes[].egress_bps)"},
		{"cluster:\n  nodes:\n    - {count: 2.5, egress_bps: 1000000000, disk_weight: 1}\n", "line 3: cluster.nodes[].count (--nodes) 2.5: want a whole number"},
		// A title kind's durations: by their line and as written (before,
		// "title kind \"a\": need share > 0, ... <= 24h", no line, no value).
		{"demand:\n  kinds:\n    - {name: a, share: 1, bitrate_bps: 1000000, min_duration: 2d, max_duration: 3d}\n", "line 3: demand.kinds[].min_duration 2d (title kind \"a\"): out of (0, 24h]"},
		{"demand:\n  kinds:\n    - {name: a, share: 1, bitrate_bps: 1000000, min_duration: 1h, max_duration: 1d1s}\n", "line 3: demand.kinds[].max_duration 1d1s (title kind \"a\"): out of [min_duration 1h, 24h]"},
		{"demand:\n  kinds:\n    - name: a\n      share: 1\n      bitrate_bps: 1000000\n      min_duration: 1h\n      max_duration: 0\n", "line 7: demand.kinds[].max_duration 0 (title kind \"a\"): out of [min_duration 1h, 24h]"},
		{"demand:\n  subscribers: [1, 2]\n", "line 2: a list where a single value belongs (key demand.subscribers)"},
	} {
		os.WriteFile(p, []byte(c.yaml), 0o644)
		_, err := runCommand("--config", p, "--print-config")
		want := "--config " + p + ": " + c.want
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v\nwant %q", c.yaml, err, want)
			continue
		}
		if strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "time.Duration") || strings.Contains(err.Error(), "24h0m0s") {
			t.Errorf("%q: the decoder's words: %v", c.yaml, err)
		}
	}
	// A value given by a flag is not quoted from the file: the flag's
	// value is what is refused.
	os.WriteFile(p, []byte("cdp:\n  setup_delay: 30m\n"), 0o644)
	if _, err := runCommand("--config", p, "--cdp-setup", "2d", "--print-config"); err == nil || !strings.Contains(err.Error(), "cdp.setup_delay (--cdp-setup) 2d: out of [0, 1h]") || strings.Contains(err.Error(), "line 2") {
		t.Errorf("--cdp-setup 2d over the file: %v", err)
	}
}
