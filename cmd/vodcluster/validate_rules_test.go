package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestManagerRuleErrorsAtTheirLines: the manager's values that lsm's or
// smm's own rules refuse (an order between two keys, a policy or planner
// they do not know) were said without the file's line nor the key as
// written ("scheduler: lsm: overload threshold 0.5 below the normal
// utilization limit 0.8"); they now name the keys that break the rule,
// as the file writes them, at their lines, as the range errors of
// single values do.
func TestManagerRuleErrorsAtTheirLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	for _, c := range []struct{ yaml, want string }{
		{"manager:\n  scheduler:\n    overload: 0.50\n", "line 3: scheduler.overload 0.50: lsm: overload threshold 0.5 below the normal utilization limit 0.8"},
		{"manager:\n  scheduler:\n    normal: 0.95\n    overload: 0.92\n", "line 3: scheduler.normal 0.95, line 4: scheduler.overload 0.92: lsm: overload threshold"},
		// overload at its default, 0.9: leaving it out changed nothing,
		// and it was not named.
		{"manager:\n  scheduler:\n    normal: 0.95\n    overload: 0.9\n", "line 3: scheduler.normal 0.95, line 4: scheduler.overload 0.9: lsm: overload threshold"},
		// overload at its default, which passes only at normal's value
		// (1): no scaling of it by a tenth or a half reached it.
		{"manager:\n  scheduler:\n    normal: 1\n    overload: 0.9\n", "line 3: scheduler.normal 1, line 4: scheduler.overload 0.9: lsm: overload threshold"},
		{"manager:\n  scheduler:\n    a: 1\n    lard_low: 0.9\n", "line 4: scheduler.lard_low 0.9: lsm: lard thresholds low=0.9 high=0.85"},
		{"manager:\n  scheduler:\n    chbl_factor: 0.5\n", "line 3: scheduler.chbl_factor 0.5: lsm: chbl balance factor"},
		// Infinities pass the key's own check (a ratio >= 0) and are
		// refused by the scheduler's: a = .inf made every load NaN.
		{"manager:\n  scheduler:\n    a: .inf\n", "line 3: scheduler.a .inf: lsm: load weights"},
		{"manager:\n  scheduler:\n    lard_high: 2\n", "line 3: scheduler.lard_high 2: lsm: lard thresholds"},
		{"manager:\n  scheduler:\n    policy: nope\n", "line 3: scheduler.policy nope: lsm: unknown policy \"nope\""},
		{"manager:\n  storage:\n    retry_base: 1d\n", "line 3: storage.retry_base 1d: smm: replicator: retry base"},
		{"manager:\n  storage:\n    retry_base: 2h\n    retry_max: 90m\n", "line 3: storage.retry_base 2h, line 4: storage.retry_max 90m: smm: replicator: retry base"},
		{"manager:\n  storage:\n    retry_base: 2h\n    retry_max: 30m\n", "line 3: storage.retry_base 2h, line 4: storage.retry_max 30m: smm: replicator: retry base"},
		// retry_max at its default, 30m: ten times it is still below 1d.
		{"manager:\n  storage:\n    retry_base: 1d\n    retry_max: 30m\n", "line 3: storage.retry_base 1d, line 4: storage.retry_max 30m: smm: replicator: retry base"},
		{"manager:\n  storage:\n    off_peak_start: 25h\n", "line 3: storage.off_peak_start 25h: smm: replicator: off-peak window"},
		{"manager:\n  storage:\n    planner: later\n", "line 3: storage.planner later: smm: unknown planner"},
		{"manager:\n  storage:\n    target_utilization: 1.5\n", "line 3: storage.target_utilization 1.5: smm: replicator: target utilization"},
	} {
		os.WriteFile(p, []byte(c.yaml), 0o600)
		cfg, err := loadConfig(p)
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		err = inConfig(p, cfg.Manager.validate())
		if want := "--config " + p + ": " + c.want; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v\nwant %q", c.yaml, err, want)
		}
	}
	// Not from a file: the keys without a line.
	err := ManagerConfig{Scheduler: SchedulerConfig{Overload: 0.5}}.validate()
	if err == nil || !strings.HasPrefix(err.Error(), "scheduler.overload 0.5: lsm: overload threshold") {
		t.Errorf("without a file: %v", err)
	}
}

// A value scaled out of int64's range is not tried: converted, it wraps
// (on amd64 to the most negative int64), and a rule that a negative
// value passes would name a key whose every real value breaks it.
func TestFixedByOtherNoOverflow(t *testing.T) {
	type section struct {
		Base time.Duration `yaml:"base"`
		Max  time.Duration `yaml:"max"`
	}
	s := reflect.New(reflect.TypeFor[section]()).Elem()
	// A rule no value a file can set passes: max below 0.
	negative := func(s any) error {
		if m := s.(section).Max; m >= 0 {
			return fmt.Errorf("max %v not below 0", m)
		}
		return nil
	}
	huge := time.Duration(math.MaxInt64 / 3)
	s.Set(reflect.ValueOf(section{Base: 2 * time.Second, Max: huge}))
	if fixedByOther(s, 1, reflect.ValueOf(huge), negative) {
		t.Fatal("a value scaled out of range, wrapped to a negative one, named the key")
	}
	// A value the scaling reaches is found: max at most 1s.
	short := func(s any) error {
		if m := s.(section).Max; m > time.Second {
			return fmt.Errorf("max %v above 1s", m)
		}
		return nil
	}
	s.Set(reflect.ValueOf(section{Base: 2 * time.Second, Max: 5 * time.Second}))
	if !fixedByOther(s, 1, reflect.ValueOf(5*time.Second), short) {
		t.Fatal("max 5s: a tenth of it passes, not found")
	}
}
