package durflag

import (
	"errors"
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
		25 * time.Hour: "25h", 48 * time.Hour: "48h (2 days)", 0: "0s", 1500 * time.Millisecond: "1.5s", time.Hour + time.Second: "1h0m1s",
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
