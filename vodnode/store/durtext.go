package store

import (
	"strconv"
	"time"
)

// durText renders d as an operator writes it in the configuration file
// (and as the configuration reads it back): without Go's zero units
// ("1h", "1m30s", "500ms", not "1h0m0s"), in whole days from one day up
// and what is left of a day after them ("30d", "1d12h"); "0s" for 0. For
// the durations quoted in operator messages (fill errors, the log),
// where Duration.String's "1h0m0s" is not what the configuration says.
// It is cmd/internal/durflag.Written (and acm's durText), which vodnode
// cannot import.
func durText(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0s"
	case d < 0 && -d > 0: // not the most negative duration, which -d cannot hold
		return "-" + durText(-d)
	case d < 0:
		return d.String()
	}
	s := ""
	if d >= day {
		s = strconv.FormatInt(int64(d/day), 10) + "d"
	}
	rest := d % day // each unit left out where it is 0: "1h30s", not "1h0m30s"
	if h := rest / time.Hour; h > 0 {
		s += strconv.FormatInt(int64(h), 10) + "h"
	}
	if m := rest % time.Hour / time.Minute; m > 0 {
		s += strconv.FormatInt(int64(m), 10) + "m"
	}
	if r := rest % time.Minute; r > 0 {
		s += r.String() // "30s", "0.5s", "500ms"
	}
	return s
}
