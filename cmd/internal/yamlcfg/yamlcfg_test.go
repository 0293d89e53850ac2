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
	Uns   uint16         `yaml:"uns"`
	Flag  bool           `yaml:"flag"`
	Sub   *testItem      `yaml:"sub"`
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
		// A whole number out of range (as fractionalInts says a float
		// out of range), quoted, or longer than the decoder quotes: said
		// so, whole, with its key (before: "`-1` is not a whole number",
		// "`1000000...`" and no key).
		{"items:\n  - {size: 99999999999999999999}\n", "line 2: <items[].size> 99999999999999999999: out of range (a whole number from -9223372036854775808 to 9223372036854775807)"},
		{"uns: -1\n", "line 1: <uns> -1: out of range (a whole number from 0 to 65535)"},
		{"count: 1e30\n", "line 1: <count> 1e30: out of range (a whole number from -9223372036854775808 to 9223372036854775807)"},
		{"count: -.inf\n", "line 1: <count> -.inf: out of range (a whole number from -9223372036854775808"},
		{"count: \"8\"\n", "line 1: `8` is quoted, a text: write the number without quotes (key <count>)"},
		// A list or a single value where a section belongs (before: "a
		// list where a single value belongs", "`5` is not a value this
		// key takes").
		{"sub: [1, 2]\n", "line 1: a list where a section belongs: its keys go under it, one per line (KEY: VALUE) (key <sub>)"},
		{"sub: 5\n", "line 1: `5` is a single value where a section belongs: its keys go under it, one per line (KEY: VALUE) (key <sub>)"},
		{"items:\n  - 5\n", "line 2: `5` is a single value where a section belongs: its keys go under it, one per line (KEY: VALUE) (key <items>)"},
		{"flag: 'true'\n", "line 1: `true` is quoted, a text: write true or false without quotes (key <flag>)"},
		{"rates: ['1.5']\n", "line 1: `1.5` is quoted, a text: write the number without quotes (key <rates>)"},
		{"items:\n  - {size: 10000000kbit}\n", "line 2: `10000000kbit` is not a whole number: write digits alone, without a unit or suffix (bit/s, bytes and counts are integers) (key <items[].size>)"},
		// A single value where a list belongs, a mapping where a list
		// belongs, and a file that is no mapping of keys: said so, not
		// "`x` is not a value this key takes", "a mapping where a
		// single value belongs" nor the Go type of the configuration.
		{"rates: 5\n", "line 1: `5` is a single value where a list belongs: write [5], or its items on lines of their own, each starting with '- ' (key <rates>)"},
		{"items: a\n", "line 1: `a` is a single value where a list belongs: write its items on lines of their own, each starting with '- ' (key <items>)"},
		{"items: {name: a}\n", "line 1: a mapping where a list belongs: write its items on lines of their own, each starting with '- ' (key <items>)"},
		{"- count: 1\n", "line 1: the file is a list: it holds keys with their values, one per line (KEY: VALUE), in their sections"},
		{"\n\ncount\n", "line 3: the file is the single value `count`: it holds keys"},
	} {
		var v testConf
		_, err := Decode([]byte(c.yaml), &v, Options{DurationKey: name, Key: name})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %q", c.yaml, err, c.want)
		}
	}
}

// A scalar written once and used again by its alias (&z 0, then *z) is
// a duration at one use and a count or a name at another: the
// duration's is read as one (days, a bare 0), the others as written.
// Before, the duration's rewriting in Go's form showed through the
// alias: "`0s` is not a whole number", a name "24h0m0s".
func TestDecodeAliasSharedWithOtherKinds(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want testConf
	}{
		{"wait: &z 0\ncount: *z\n", testConf{Count: 0}},
		{"count: &z 0\nwait: *z\n", testConf{Count: 0}},
		{"wait: &d 2d\nitems:\n  - {name: *d, hold: *d}\n", testConf{Wait: 48 * time.Hour, Count: 7, Items: []testItem{{Name: "2d", Hold: 48 * time.Hour}}}},
		{"items:\n  - {name: &d 1d, hold: *d}\n", testConf{Wait: time.Minute, Count: 7, Items: []testItem{{Name: "1d", Hold: 24 * time.Hour}}}},
	} {
		v := testConf{Wait: time.Minute, Count: 7}
		f, err := Decode([]byte(c.yaml), &v, Options{})
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if v.Wait != c.want.Wait || v.Count != c.want.Count || len(v.Items) != len(c.want.Items) || (len(v.Items) == 1 && v.Items[0] != c.want.Items[0]) {
			t.Errorf("%q: decoded %+v, want %+v", c.yaml, v, c.want)
		}
		if f.Doc == nil {
			t.Errorf("%q: no document", c.yaml)
		}
	}
	// The alias's line is where its duration is shown.
	var v testConf
	f, err := Decode([]byte("count: &z 0\n\nwait: *z\n"), &v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Durations.Show("wait", "wait", 0); got != "line 3: wait 0" {
		t.Errorf("shown %q", got)
	}
}

// File.Show quotes a value of any kind as written at its line when the
// file has it so (the first item of a list that has it, an alias at its
// use), and shows it as it reads otherwise, as DurTexts.Show does a
// duration; a nil File shows every value as it reads.
func TestFileShowAnyValue(t *testing.T) {
	var c testConf
	f, err := Decode([]byte("count: 0x10\nitems:\n  - {size: 5}\n  - size: &s 07\n  - {size: *s}\nrates: [1.50, .nan]\nwait: 2d\n"), &c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		path string
		v    any
		want string
	}{
		{"count", 16, "line 1: count 0x10"},
		{"items[].size", int64(7), "line 4: items[].size 07"},
		{"items[].size", int64(5), "line 3: items[].size 5"},
		{"items[].size", int64(9), "items[].size 9"},
		{"rates", 1.5, "line 6: rates 1.50"},
		{"rates", c.Rates[1], "line 6: rates .nan"},
		{"uns", uint16(3), "uns 3"},
		{"wait", 48 * time.Hour, "line 7: wait 2d"},
		// An item by its index: that item's line, not the first with the value.
		{"items[2].size", int64(7), "line 5: items[2].size 07"},
		{"items[1].size", int64(7), "line 4: items[1].size 07"},
		{"items[0].size", int64(7), "items[0].size 7"},
		{"items[9].size", int64(7), "items[9].size 7"},
		{"rates[1]", c.Rates[1], "line 6: rates[1] .nan"},
	} {
		if got := f.Show(s.path, s.path, s.v); got != s.want {
			t.Errorf("Show(%s, %v) = %q, want %q", s.path, s.v, got, s.want)
		}
	}
	if got := (*File)(nil).Show("wait", "wait", 48*time.Hour); got != "wait 48h (2 days)" {
		t.Errorf("nil File: %q", got)
	}
	if got := (*File)(nil).Show("count", "count", 3); got != "count 3" {
		t.Errorf("nil File: %q", got)
	}
}
