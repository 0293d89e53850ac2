package durflag

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// A value set keeps what was typed; days are taken; the default reads
// without zero units.
func TestValue(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"366d": 366 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute, "-1d": -24 * time.Hour, "0d": 0, "1.5s": 1500 * time.Millisecond,
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		v := Var(fs, "for", 0, "")
		if err := fs.Parse([]string{"--for", in}); err != nil || v.D != want || v.String() != in {
			t.Errorf("%q: %v %v %q, want %v", in, err, v.D, v.String(), want)
		}
	}
	for _, in := range []string{"d", "1.5d", "1d-1h", "xd", "1e", "", "9999999999d", "106751d24h"} {
		var v Value
		if err := v.Set(in); err == nil {
			t.Errorf("%q: taken as %v", in, v.D)
		} else if in != "" && !strings.Contains(err.Error(), in) {
			t.Errorf("%q: error %v does not quote it", in, err)
		}
	}
	// Go's own malformed forms are answered with the remedy, not with
	// time.ParseDuration's text ("time: unknown unit").
	for _, in := range []string{"2x", "5", "1h-", "abc"} {
		var v Value
		if err := v.Set(in); err == nil || !strings.Contains(err.Error(), "want a duration such as 90s") || strings.Contains(err.Error(), "time:") {
			t.Errorf("%q: %v, want it quoted with the forms taken", in, err)
		}
	}
	if v := (&Value{D: 10 * time.Second}); v.String() != "10s" {
		t.Errorf("default: %q", v.String())
	}
}

// A number of days too big for a time.Duration is said to be so, the
// limit named, however many digits it has: past 2^32 days (and past
// 2^64) it was "want a duration such as 90s ...", as if malformed.
func TestTooManyDays(t *testing.T) {
	for _, in := range []string{"106752d", "4294967296d", "999999999999d", "99999999999999999999999d", "-999999999999d", "999999999999d1h",
		// Go's form, written right but too long: not "invalid duration".
		"10000000000s", "-2562048h", "9223372036854775808ns", "1d2562048h", "99999999999999999999m1s"} {
		var v Value
		if err := v.Set(in); err == nil || !strings.Contains(err.Error(), "at most 106751 days") || !strings.Contains(err.Error(), in) {
			t.Errorf("%q: %v, want it quoted and \"at most 106751 days\"", in, err)
		}
		if _, err := Parse(in); !errors.Is(err, ErrTooLong) {
			t.Errorf("Parse(%q): %v, want ErrTooLong (the configuration's message says so)", in, err)
		}
	}
	for _, in := range []string{"1x", "10000000000", "1d10000000000", "1.2.3s", "s", ".s", "1h-1m"} {
		if _, err := Parse(in); err == nil || errors.Is(err, ErrTooLong) {
			t.Errorf("Parse(%s): %v, want an error that is not ErrTooLong", in, err)
		}
	}
	if d, err := Parse("2562047h"); err != nil || d != 2562047*time.Hour {
		t.Errorf("Parse(2562047h) = %v, %v", d, err)
	}
}

func TestReadable(t *testing.T) {
	for d, want := range map[time.Duration]string{
		8784 * time.Hour: "8784h (366 days)", time.Hour: "1h", 90 * time.Second: "1m30s", time.Second: "1s",
		25 * time.Hour: "25h", 48 * time.Hour: "48h (2 days)", 0: "0s", 1500 * time.Millisecond: "1.5s", time.Hour + time.Second: "1h1s",
		25*time.Hour + time.Second: "25h1s", -(25*time.Hour + 30*time.Minute): "-25h30m", 26*time.Hour + 500*time.Millisecond: "26h500ms",
	} {
		if got := Readable(d); got != want {
			t.Errorf("Readable(%v) = %q, want %q", d, got, want)
		}
	}
}

// A leading '+' is taken before days as Go takes it before hours: "+1h"
// was taken and "+1d" refused as malformed. A sign after it is not.
func TestPlusDays(t *testing.T) {
	var v Value
	if err := v.Set("+1d12h"); err != nil || v.D != 36*time.Hour || v.String() != "+1d12h" {
		t.Errorf("+1d12h: %v %v %q", err, v.D, v.String())
	}
	for _, in := range []string{"+-1d", "++1d", "-+1d"} {
		if err := v.Set(in); err == nil {
			t.Errorf("%q taken", in)
		}
	}
}

// Written gives the form an operator writes ("1h", "30d", "1m30s", not
// Go's "1h0m0s", "720h0m0s"), and Parse reads it back to the same
// duration.
func TestWrittenReadsBack(t *testing.T) {
	const day = 24 * time.Hour
	for d, want := range map[time.Duration]string{
		0:                             "0s",
		time.Hour:                     "1h",
		90 * time.Second:              "1m30s",
		30 * day:                      "30d",
		36 * time.Hour:                "1d12h",
		day + time.Second:             "1d1s",
		500 * time.Millisecond:        "500ms",
		-2 * day:                      "-2d",
		-90 * time.Second:             "-1m30s",
		23*time.Hour + 59*time.Minute: "23h59m",
		// Go's zero units in the middle too: "1h0m30s", "1d1h0m0.5s".
		time.Hour + 30*time.Second:                  "1h30s",
		25*time.Hour + 500*time.Millisecond:         "1d1h500ms",
		day + 2*time.Minute + 1500*time.Microsecond: "1d2m1.5ms",
		-(time.Hour + time.Nanosecond):              "-1h1ns",
	} {
		if got := Written(d); got != want {
			t.Errorf("Written(%v) = %q, want %q", d, got, want)
		}
	}
	for _, d := range []time.Duration{1, -1, time.Minute + time.Nanosecond, 1<<63 - 1, -1 << 63, -(1<<63 - 1), 106751 * day, 1234567890123456789, -987654321987654321} {
		got, err := Parse(Written(d))
		if err != nil || got != d {
			t.Errorf("Parse(Written(%d) = %q) = %v, %v", d, Written(d), got, err)
		}
	}
}

// zeroUnit matches a unit written with 0 ("1h0m30s"): Written leaves
// them out.
var zeroUnit = regexp.MustCompile(`(^|[^0-9.])0(d|h|m|s|ms|µs|ns)`)

// Written, and Readable, read back through Parse for durations of every size and
// shape: each unit from nanoseconds to days alone and combined
// (sub-second fractions, days with a remainder), both signs, and
// random values of every magnitude up to the extremes.
func TestWrittenReadsBackMany(t *testing.T) {
	const day = 24 * time.Hour
	units := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour, day}
	var ds []time.Duration
	for _, a := range units {
		for _, b := range units {
			for _, n := range []time.Duration{1, 7, 59, 999, 1001} {
				ds = append(ds, a, n*a, n*a+b, n*a+3*b+time.Nanosecond, day+n*a)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		d := time.Duration(r.Int64N(1<<63-1) >> r.UintN(63)) // every magnitude
		ds = append(ds, d)
	}
	ds = append(ds, 1<<63-1, -(1 << 63), 106751*day, 106751*day+23*time.Hour)
	for _, d := range ds {
		for _, v := range []time.Duration{d, -d} {
			w := Written(v)
			got, err := Parse(w)
			if err != nil || got != v {
				t.Fatalf("Parse(Written(%d) = %q) = %d, %v", v, w, got, err)
			}
			h, _, _ := strings.Cut(Readable(v), " (")
			if got, err := Parse(h); err != nil || got != v || v != 0 && zeroUnit.MatchString(h) && v != -(1<<63) {
				t.Fatalf("Parse(Readable(%d) = %q) = %d, %v", v, h, got, err)
			}
			if v != 0 && zeroUnit.MatchString(w) && v != -(1<<63) { // the most negative: Go's form

				t.Fatalf("Written(%d) = %q: a zero unit written", v, w)
			}
		}
	}
}
