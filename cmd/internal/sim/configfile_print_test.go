package sim

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestPrintConfigDurationsAsWritten: --print-config wrote durations in
// Go's form ("plan_interval: 5m0s", "down_mean: 48h0m0s", "1m30s" for
// 90s alike, "1h0m0s"), not as an operator writes them in the file it is
// meant to be. They are now written without zero units and in days from
// a day up ("5m", "2d", "1d12h"), and the printed file reads back to the
// same values: printed again from it, it is the same byte for byte.
func TestPrintConfigDurationsAsWritten(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.yaml")
	os.WriteFile(in, []byte("days: 3\nplan_interval: 1d12h\nsample_interval: 3600s\ndemand:\n  watch_median: 90s\n  kinds:\n    - {name: a, share: 1, bitrate_bps: 1000000, min_duration: 1h, max_duration: 24h}\ncdp:\n  setup_delay: 0\nfailures:\n  down_mean: 2d\n"), 0o644)
	first, err := runCommand("--config", in, "--cdp-setup", "1m", "--print-config")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nplan_interval: 1d12h\n", "\nsample_interval: 1h\n", "\n  watch_median: 1m30s\n",
		"\n      min_duration: 1h\n", "\n      max_duration: 1d\n", "\n  setup_delay: 1m\n",
		"\n  down_mean: 2d\n", "\n  early_abandon_mean: 3m\n", "\n  slow_start: 30s\n", "\n  queue_wait: 5s\n",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("printed without %q:\n%s", want, first)
		}
	}
	if goForm := regexp.MustCompile(`(?m):.*[0-9]+[hm]0s$|:.*h0m$`); goForm.MatchString(first) {
		t.Errorf("a duration in Go's form: %q", goForm.FindString(first))
	}
	printed := filepath.Join(dir, "printed.yaml")
	os.WriteFile(printed, []byte(first), 0o644)
	second, err := runCommand("--config", printed, "--print-config")
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Errorf("printed again from the printed file:\n%s\nwant\n%s", second, first)
	}
	// The same values, read back.
	a, b := Default(), Default()
	if err := a.LoadFile(printed); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(in, []byte(second), 0o644)
	if err := b.LoadFile(in); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a.PlanInterval.Hours() != 36 || a.Failures.DownMean.Hours() != 48 || a.CDP.SetupDelay.Minutes() != 1 {
		t.Errorf("read back %+v\nand %+v", a, b)
	}
}
