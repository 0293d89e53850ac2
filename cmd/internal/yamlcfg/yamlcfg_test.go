package yamlcfg

import (
	"strings"
	"testing"
	"time"
)

type testConf struct {
	Wait  time.Duration  `yaml:"wait"`
	Ramp  *time.Duration `yaml:"ramp"`
	Count int            `yaml:"count"`
	Items []testItem     `yaml:"items"`
	Rates []float64      `yaml:"rates"`
}

type testItem struct {
	Name string        `yaml:"name"`
	Hold time.Duration `yaml:"hold"`
	Size int64         `yaml:"size"`
}

// Decode overlays the file's values on those v holds (a key left out
// keeps its value, a bare 0 is 0), takes days, and records each duration
// as written by its path, a list's items with "[]".
func TestDecodeOverlaysWithDays(t *testing.T) {
	c := testConf{Wait: time.Minute, Count: 7}
	f, err := Decode([]byte("ramp: 1d12h\nitems:\n  - {name: a, hold: 2d}\n  - name: b\n    hold: 0\n"), &c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Wait != time.Minute || c.Count != 7 || c.Ramp == nil || *c.Ramp != 36*time.Hour || len(c.Items) != 2 || c.Items[0].Hold != 48*time.Hour || c.Items[1].Hold != 0 {
		t.Fatalf("decoded %+v", c)
	}
	if got := f.Durations.Show("items[].hold", "hold", 48*time.Hour); got != "line 3: hold 2d" {
		t.Errorf("shown %q", got)
	}
	if got := f.Durations.Show("items[].hold", "hold", 0); got != "line 5: hold 0" {
		t.Errorf("shown %q", got)
	}
	if got := f.Durations.Show("wait", "wait", time.Minute); got != "wait 1m" {
		t.Errorf("not in the file: shown %q", got)
	}
	if u := f.Durations.Under("items[]"); len(u["hold"]) != 2 {
		t.Errorf("under items[]: %v", u)
	}
}

// Errors name their key through Options, by its path: a duration by
// DurationKey, a whole number and a value of the wrong kind by Key (in a
// list of scalars, the list's).
func TestDecodeNamesKeysByPath(t *testing.T) {
	name := func(p string) string { return "<" + p + ">" }
	for _, c := range []struct{ yaml, want string }{
		{"items:\n  - {hold: 5}\n", "line 2: <items[].hold> 5: not a duration"},
		{"items:\n  - {size: 1.5}\n", "line 2: <items[].size> 1.5: want a whole number"},
		{"items:\n  - {size: 1M}\n", "line 2: `1M` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key <items[].size>)"},
		{"rates: [1, x]\n", "line 1: `x` is not a number (key <rates>)"},
		{"count: &n lots\nitems:\n  - size: *n\n", "line 1: `lots` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key <count>, and <items[].size> at line 3 by its alias *n)"},
		{"count: 1\n---\ncount: 2\n", "line 3: a second document (after ---)"},
		{"cuont: 1\n", "unknown key cuont"},
	} {
		var v testConf
		_, err := Decode([]byte(c.yaml), &v, Options{DurationKey: name, Key: name})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %q", c.yaml, err, c.want)
		}
	}
}
