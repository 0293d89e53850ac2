package vodnode

import (
	"strings"
	"testing"
	"time"
)

// A PLAY whose Range the node cannot read is answered 457 with the value,
// why, and the forms the node plays; a single time without its dash
// ("npt=5") names the form meant. The answer was "invalid Range" alone.
func TestInvalidRangeSaysWhy(t *testing.T) {
	n := startNode(t, startOrigin(t, newFakeOrigin(t)))
	url := nodeURL(n, mint(t, "sid-r", "sample-001", "node-1", "127.0.0.1", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	if res := c.do("DESCRIBE", url); res.StatusCode != 200 {
		t.Fatalf("DESCRIBE: %s", statusLine(res))
	}
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	huge := "npt=" + strings.Repeat("9", 200) + "-"
	for _, tc := range []struct{ rng, want string }{
		{"npt=5", `invalid Range "npt=5": a start needs its dash (npt=5-)`},
		{"npt=0:01:02.5", `a start needs its dash (npt=0:01:02.5-)`},
		{"npt=abc-", `invalid Range "npt=abc-": malformed;`},
		{"npt=5-3", `invalid Range "npt=5-3": range ends (3.000 s) before it starts (5.000 s)`},
		{"smpte-25=00:00:01:25-", "frame 25: at most 24"},
		{huge, `invalid Range "npt=` + strings.Repeat("9", 76) + `…": malformed`},
	} {
		res := c.do("PLAY", url+"/", "Session", id, "Range", tc.rng)
		body := string(res.Body)
		if res.StatusCode != 457 || !strings.Contains(body, tc.want) || !strings.Contains(body, "the node plays npt=START-") {
			t.Errorf("PLAY Range %.40q: %s %q, want 457 with %q and the forms", tc.rng, statusLine(res), body, tc.want)
		}
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=5-"); res.StatusCode != 200 {
		t.Errorf("PLAY npt=5- after the refusals: %s", statusLine(res))
	}
}
