package durtext

import (
	"math"
	"testing"
	"time"
)

// Durations in operator messages read as the configuration writes them.
func TestWritten(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Hour, "1h"},
		{90 * time.Second, "1m30s"},
		{time.Hour + 30*time.Second, "1h30s"},
		{500 * time.Millisecond, "500ms"},
		{2 * time.Second, "2s"},
		{36 * time.Hour, "1d12h"},
		{30 * 24 * time.Hour, "30d"},
		{-2 * time.Minute, "-2m"},
		{math.MinInt64, time.Duration(math.MinInt64).String()},
	} {
		if got := Written(c.d); got != c.want {
			t.Errorf("Written(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// A duration computed for a message ("within about …") is rounded to what
// an operator reads, and keeps Written's form.
func TestAbout(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{50 * time.Second / 3, "17s"},
		{5 * time.Second / 3, "1.7s"},
		{time.Second / 3, "333ms"},
		{250 * time.Millisecond, "250ms"},
		{90*time.Second + 400*time.Millisecond, "1m30s"},
		{36*time.Hour + 2*time.Second/3, "1d12h1s"},
		{-50 * time.Second / 3, "-17s"},
		{1500 * time.Microsecond, "2ms"},
	} {
		if got := About(c.d); got != c.want {
			t.Errorf("About(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
