package vodnode

import (
	"errors"
	"math"
	"testing"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
)

// parseRange reads npt and the three SMPTE types (frames at 29.97 a
// second for smpte and smpte-30-drop, 25 for smpte-25, subframes in
// hundredths of a frame); an empty value, a frame number past the rate
// (it was taken as the whole second) or a subframe over 99 is malformed
// (PLAY answers 457), a format other than those is errRangeFormat (501);
// spaces around npt's "=" and "-" are read past.
func TestParseRange(t *testing.T) {
	const drop = 30000.0 / 1001
	for _, c := range []struct {
		v          string
		start, end float64
	}{
		{"npt=2.5-", 2.5, -1},
		{"npt=0:01:02-0:01:04.5", 62, 64.5},
		{"smpte-25=00:00:05:12-", 5 + 12.0/25, -1},
		{"smpte=00:00:01:15-00:00:02", 1 + 15/drop, 2},
		{"smpte-30-drop=00:01:00:29.50-", 60 + 29.5/drop, -1},
		{"smpte=00:00:10-", 10, -1},
		// ffmpeg's -ss 0 on a stream whose first timestamp is 0.151 s:
		// a seek before the start, played from 0
		{"npt=0.-151-", 0, -1},
		{"npt=-2.-5-", 0, -1},
		// a whole negative second (-ss -0.849 on that stream): ffmpeg
		// waited for a play after 457
		{"npt=-1.000-", 0, -1},
		{"npt=-2.000-", 0, -1},
		// spaces around "=" and "-": 501 "use npt=" before
		{"npt = 3 -", 3, -1},
		{"NPT= 1.5 - 4 ;time=20261130T150000Z", 1.5, 4},
	} {
		start, end, err := parseRange(base.HeaderValue{c.v}, false)
		if err != nil || math.Abs(start-c.start) > 1e-9 || math.Abs(end-c.end) > 1e-9 {
			t.Errorf("%s: %v to %v, %v; want %v to %v", c.v, start, end, err, c.start, c.end)
		}
	}
	for _, v := range []string{"", " ", "smpte-25=00:00:01:25-", "smpte=00:00:01:30-", "smpte=00:00:01:99-",
		"smpte-25=00:00:01:10.100-", "smpte=00:00:02-00:00:01:29",
		"npt=-1.500-", "npt=-1.000-2"} {
		if _, _, err := parseRange(base.HeaderValue{v}, false); err == nil || errors.Is(err, errRangeFormat) {
			t.Errorf("%q: %v, want a malformed range", v, err)
		}
	}
	if _, _, err := parseRange(base.HeaderValue{"clock=20261130T150000Z-"}, false); !errors.Is(err, errRangeFormat) {
		t.Errorf("clock=: %v, want errRangeFormat", err)
	}
}
