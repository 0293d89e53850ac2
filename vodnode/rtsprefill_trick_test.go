package vodnode

import (
	"testing"
	"time"
)

// An RTSP viewer in trick play (Scale 2) over a title whose fill fails
// half-way (the origin away longer than fill_retry_for) plays on once the
// origin is back, without a PLAY: the node fills the title again for the
// session as soon as the stream meets the failure, and the stream goes on
// from where it stands to the end of the title, its RTP sequence numbers
// following one another, and ends with the BYE of the end of the title,
// its position the title's duration. It was cut off at once with an RTCP
// BYE "fill failed", though the origin came back.
func TestRTSPTrickPlayGoesOnPastAFailedFill(t *testing.T) {
	t.Parallel() // real-time bound: about 4 s
	o, n, _, _ := failingOriginNode(t, 2, 300*time.Millisecond)
	got := &rtspTimeline{}
	c := dialRTSP(t, n)
	c.onFrame = got.gather
	url := nodeURL(n, mint(t, "rtsp-refill-trick", "short-001", "node-1", "", 10*time.Minute), "short-001")
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	id := sessionID(res)
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=0-", "Scale", "2"); res.StatusCode != 200 || res.Header["Scale"][0] != "2.000" {
		t.Fatalf("PLAY at Scale 2: %s %v", statusLine(res), res.Header["Scale"])
	}
	// Trick play sends a picture now and then: the fill's failure is
	// awaited as it comes, the frames meanwhile left in the connection.
	waitFor(t, 10*time.Second, "the fill to fail", func() bool { return n.store.FillsFailed()["origin"] > 0 })
	o.failAt.Store(0) // the origin is back, whole, while the new fill retries
	got.untilBye(t, c)
	if got.bye != "end of title" {
		t.Fatalf("the trick play ended with a BYE %q after %d RTP packets, want the title's end's", got.bye, len(got.hdrs))
	}
	got.checkSeqs(t)
	checkPositionAtEnd(t, c, url, id)
	checkFilledTwice(t, n)
	teardownReleases(t, n, c, url, id)
}
