package vodnode

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
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
	o := newFakeOrigin(t)
	data := o.titles["short-001"]
	o.failAt.Store(int64(len(data)/2) / 188 * 188)
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.FillRetryFor = 300 * time.Millisecond
		n.SessionTimeout, n.PauseTimeout = time.Minute, time.Minute
	})
	var hdrs []rtp.Header
	bye := ""
	c := dialRTSP(t, n)
	c.onFrame = func(ch int, b []byte) {
		var pkt rtp.Packet
		if ch == 0 && pkt.Unmarshal(b) == nil {
			hdrs = append(hdrs, pkt.Header)
		}
		if ps, _ := rtcp.Unmarshal(b); ch == 1 && bye == "" {
			for _, p := range ps {
				if g, ok := p.(*rtcp.Goodbye); ok {
					bye = g.Reason
				}
			}
		}
	}
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
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for bye == "" {
		if _, _, err := c.frame(); err != nil {
			t.Fatalf("no BYE after %d RTP packets: %v", len(hdrs), err)
		}
	}
	if bye != "end of title" {
		t.Fatalf("the trick play ended with a BYE %q after %d RTP packets, want the title's end's", bye, len(hdrs))
	}
	for i := 1; i < len(hdrs); i++ {
		if hdrs[i].SequenceNumber != hdrs[i-1].SequenceNumber+1 {
			t.Fatalf("RTP packet %d: sequence number %d after %d", i, hdrs[i].SequenceNumber, hdrs[i-1].SequenceNumber)
		}
	}
	res = c.doBody("GET_PARAMETER", url+"/", "position\r\n", "Session", id, "Content-Type", "text/parameters")
	var at float64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(res.Body)), "position: %g", &at); err != nil || at < shortSeconds-1 {
		t.Fatalf("position at the BYE: %s (%v), want about %d s", statusLine(res), err, shortSeconds)
	}
	if f := n.store.Fills()["short-001"]; f != 2 {
		t.Errorf("%d fills of the title, want 2 (the failed one, and the one for the session)", f)
	}
	teardownReleases(t, n, c, url, id)
}
