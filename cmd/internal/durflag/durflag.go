// Package durflag is a duration flag that keeps what the user typed, for
// error messages to echo it ("--for 366d", not "--for 8784h0m0s"), and
// renders a limit in a readable form ("8784h (366 days)").
package durflag

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"vodcluster/proto/durtext"
)

// Value is a duration flag's value: the duration and the text it was
// set from. It takes what time.ParseDuration takes, and whole days
// before it: "366d", "1d12h".
type Value struct {
	D    time.Duration // the duration, 0 until set unless given a default
	text string        // what was typed; empty: the default
	// Limit, when not empty, is the most the flag's command takes, as
	// its error says it ("366d, a year"): Set's error for days past what
	// a time.Duration holds names it rather than that bound, which the
	// command's own is far below (it said "at most 106751 days", and
	// 106751d then "at most 366d"). The command checks its limit itself.
	Limit string
}

// Var defines a duration flag name on fs with default def and usage, as
// pflag.FlagSet.DurationVar does, and returns its value.
func Var(fs *pflag.FlagSet, name string, def time.Duration, usage string) *Value {
	v := &Value{D: def}
	fs.Var(v, name, usage)
	return v
}

// Set parses s: a Go duration ("90m", "1h30m"), or whole days and
// then, optionally, one ("366d", "1d12h"). Errors: any other text, or
// days past what a time.Duration holds (naming Limit when set).
func (v *Value) Set(s string) error {
	d, err := Parse(s)
	if errors.Is(err, ErrTooLong) && v.Limit != "" {
		return fmt.Errorf("%q: at most %s", s, v.Limit)
	}
	if err != nil {
		return err
	}
	v.D, v.text = d, s
	return nil
}

// Parse reads s as Set does: a Go duration ("90m", "1h30m"), or whole
// days and then, optionally, one ("366d", "1d12h", "-1d"). Errors quote
// s: any other text, or days past what a time.Duration holds (about 292
// years).
func Parse(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil && goForm.MatchString(s): // "10000000000s": written right, too long
			return 0, tooLong(s)
		case err != nil: // "2x", "5": Go's text ("time: unknown unit") names no remedy
			return 0, fmt.Errorf("%q: want a duration such as 90s, 30m, 24h, 1h30m or 7d (days)", s)
		}
		return d, nil
	}
	sign := time.Duration(1)
	if t, neg := strings.CutPrefix(days, "-"); neg {
		sign, days = -1, t
	} else if t, pos := strings.CutPrefix(days, "+"); pos {
		days = t // as time.ParseDuration takes "+1h"
	}
	n, err := strconv.ParseUint(days, 10, 64)
	tooMany := errors.Is(err, strconv.ErrRange) // "999999999999d": too many, not malformed
	if (err != nil && !tooMany) || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
		return 0, fmt.Errorf("%q: want a duration such as 90s, 30m, 24h, 1h30m or 7d (days)", s)
	}
	if tooMany || n > uint64(maxDays) {
		return 0, tooLong(s)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil && goForm.MatchString(rest) {
			return 0, tooLong(s)
		}
		if err != nil {
			return 0, fmt.Errorf("%q: want a duration such as 90s, 30m, 24h, 1h30m or 7d (days)", s)
		}
		if r > time.Duration(1<<63-1)-d {
			return 0, tooLong(s)
		}
		d += r
	}
	return sign * d, nil
}

// goForm matches what time.ParseDuration reads when the duration fits
// in a time.Duration: a sign, then numbers each with its unit. Text of
// that form it refuses is too long ("10000000000s").
var goForm = regexp.MustCompile(`^[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

// ErrTooLong is what Parse's error for a duration past what a
// time.Duration holds ("106752d", "10000000000s") is (errors.Is): its text names the limit, "at most 106751 days".
var ErrTooLong = fmt.Errorf("at most %d days", maxDays)

// tooLong is Parse's error for s, past what a time.Duration holds:
// `"106752d": at most 106751 days`.
func tooLong(s string) error { return fmt.Errorf("%q: %w", s, ErrTooLong) }

// maxDays is the most days a time.Duration holds (about 292 years).
const maxDays = int64(1<<63-1) / int64(24*time.Hour)

// String returns what the flag was set from, or the default, readable,
// when it was not set ("0" for none: help then shows no default).
func (v *Value) String() string {
	switch {
	case v.text != "":
		return v.text
	case v.D == 0:
		return "0"
	}
	return Readable(v.D)
}

// Type names the flag's kind in help: "duration".
func (v *Value) Type() string { return "duration" }

// Readable renders d in hours, without zero units ("8784h", "1m30s",
// "1h1s", "5s", not "8784h0m0s" or Go's "1h0m1s"), with days beside a
// whole number of them from two up: "8784h (366 days)". Below a day it
// is Written's form.
func Readable(d time.Duration) string {
	s := hoursWritten(d)
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		s += fmt.Sprintf(" (%d days)", d/(24*time.Hour))
	}
	return s
}

// hoursWritten is durtext.Written in hours rather than days: "25h",
// "26h30m", "-25h1s".
func hoursWritten(d time.Duration) string {
	switch {
	case d > -24*time.Hour && d < 24*time.Hour:
		return durtext.Written(d)
	case d < 0 && -d > 0:
		return "-" + hoursWritten(-d)
	case d < 0:
		return d.String() // the most negative duration, whose negation overflows
	}
	s := strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	if rest := d % time.Hour; rest != 0 {
		s += durtext.Written(rest)
	}
	return s
}

// Written renders d as an operator writes it in a configuration file,
// and as Parse reads it back to d ("1h", "1m30s", "500ms", "1d12h";
// "0s" for 0): proto/durtext.Written, which the manager's and the nodes'
// messages use too.
func Written(d time.Duration) string { return durtext.Written(d) }
