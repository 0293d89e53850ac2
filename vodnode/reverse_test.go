package vodnode

import (
	"testing"
	"time"
)

// TestReverseFromTheStartIs457: a PLAY with a negative Scale from the
// title's start (Range npt=0-, or no Range where the session stands at the
// start) has nothing to play backwards: 457 Invalid Range (RFC 2326
// §11.3.12), and no media follows; from further in it plays (200), and a
// Scale between -1 and 0, granted as normal play, plays from the start
// but is refused a range that ends before it starts (457).
func TestReverseFromTheStartIs457(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	waitPrefetch(t, n, "sample-001")
	setup := func(sid string) (*testClient, string, string) {
		url := nodeURL(n, mint(t, sid, "sample-001", "node-1", "", time.Minute), "sample-001")
		c := dialRTSP(t, n)
		res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
		if res.StatusCode != 200 {
			t.Fatalf("SETUP: %s", statusLine(res))
		}
		return c, url, sessionID(res)
	}

	c, url, id := setup("rev-0")
	for _, rng := range []string{"npt=0-", "npt=0.000-", ""} {
		hdr := []string{"Session", id, "Scale", "-2"}
		if rng != "" {
			hdr = append(hdr, "Range", rng)
		}
		if res := c.do("PLAY", url+"/", hdr...); res.StatusCode != 457 {
			t.Errorf("PLAY Scale -2, Range %q, at the start: %s, want 457", rng, statusLine(res))
		}
	}
	if ms := c.readMedia(time.Second); len(ms) != 0 {
		t.Errorf("%d RTP packets after the 457s, want none", len(ms))
	}

	c, url, id = setup("rev-2")
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=2-", "Scale", "-2"); res.StatusCode != 200 || res.Header["Scale"][0] != "-2.000" {
		t.Errorf("PLAY Scale -2 from npt 2: %s %v, want 200 at Scale -2", statusLine(res), res.Header["Scale"])
	}
	c, url, id = setup("rev-half")
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-", "Scale", "-0.5"); res.StatusCode != 200 || res.Header["Scale"][0] != "1.000" {
		t.Errorf("PLAY Scale -0.5 from npt 0: %s %v, want 200 at Scale 1", statusLine(res), res.Header["Scale"])
	}
	// A range that ends before it starts goes backwards: refused when the
	// play is granted forwards, played when it is granted in reverse.
	c, url, id = setup("rev-half-range")
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=10-5", "Scale", "-0.5"); res.StatusCode != 457 {
		t.Errorf("PLAY Scale -0.5 (granted 1) Range npt=10-5: %s, Range %v, Scale %v; want 457", statusLine(res), res.Header["Range"], res.Header["Scale"])
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=10-5", "Scale", "-2"); res.StatusCode != 200 || res.Header["Scale"][0] != "-2.000" {
		t.Errorf("PLAY Scale -2 Range npt=10-5: %s %v, want 200 at Scale -2", statusLine(res), res.Header["Scale"])
	}
}
