package vodnode

import (
	"testing"
	"time"
)

// TestESNoTimeoutWhileSeekWaitsForTheFill: an elementary-stream PLAY
// into the part of the title its fill has not reached (here 15 s in,
// which a slow origin brings after several session timeouts) waits for
// the fill without being ended for the client's silence: the node has sent
// it nothing to answer, as for an MPEG-TS session waiting for its fill
// (TestNoTimeoutWhileWaitingForTheFill). Its media comes once indexed.
func TestESNoTimeoutWhileSeekWaitsForTheFill(t *testing.T) {
	o := newFakeOrigin(t)
	o.rate = 200 << 10 // 15 s of the sample in about 5.6 s
	// A timeout a loaded machine's request round trips stay well within
	// (the SETUP, silent until its PLAY, times out otherwise).
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = time.Second })
	url := esURL(n, mint(t, "es-seek-wait", "sample-001", "node-1", "", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("PLAY", url+"/", "Session", id, "Range", "npt=15-"); res.StatusCode != 200 {
		t.Fatalf("PLAY npt=15-: %s", statusLine(res))
	}
	c.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("no media once the fill reached 15 s: %v", err)
		}
		if ch == 0 {
			return
		}
		t.Fatalf("RTCP before any media (%d bytes, the session ended?)", len(b))
	}
}
