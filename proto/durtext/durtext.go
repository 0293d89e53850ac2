// Package durtext writes durations as vodcluster's configuration files
// write them ("1h", "1m30s", "500ms", "1d12h"), for every message that
// quotes one to an operator (vodctl answers, errors, logs) and for the
// configuration the commands print: Go's Duration.String writes "1h0m0s"
// and has no days. cmd/internal/durflag reads the same form back.
package durtext

import (
	"strconv"
	"time"
)

// Written renders d as an operator writes it in a configuration file,
// and as cmd/internal/durflag.Parse reads it back to d: without Go's zero
// units ("1h", "1m30s", "500ms", not "1h0m0s"), in whole days from one
// day up, and what is left of a day after them ("30d", "1d12h", "-2d");
// "0s" for 0. The most negative duration, whose negation overflows, is in
// Go's form (which also reads back).
func Written(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0s"
	case d < 0 && -d > 0: // not the most negative duration, which -d cannot hold
		return "-" + Written(-d)
	case d < 0:
		return d.String() // the most negative duration: Go's form reads back
	}
	s := ""
	if d >= day {
		s = strconv.FormatInt(int64(d/day), 10) + "d"
	}
	// Each unit left out where it is 0, in the middle too: "1h30s",
	// "1d1h500ms", not Go's "1h0m30s", "1d1h0m0.5s".
	rest := d % day
	if h := rest / time.Hour; h > 0 {
		s += strconv.FormatInt(int64(h), 10) + "h"
	}
	if m := rest % time.Hour / time.Minute; m > 0 {
		s += strconv.FormatInt(int64(m), 10) + "m"
	}
	if r := rest % time.Minute; r > 0 {
		s += r.String() // "30s", "0.5s", "500ms", "1.5µs"
	}
	return s
}

// About renders d, a duration given approximately ("within about 17s":
// one computed, not configured), rounded to what an operator reads: to
// the second from 10 s up, to a tenth of a second from 1 s, to the
// millisecond below; then as Written writes it ("17s", "1.7s", "250ms",
// not "16.666666666s").
func About(d time.Duration) string {
	a := d
	if a < 0 {
		a = -a // the most negative duration stays negative: rounded to the millisecond
	}
	switch {
	case a >= 10*time.Second:
		d = d.Round(time.Second)
	case a >= time.Second:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Millisecond)
	}
	return Written(d)
}
