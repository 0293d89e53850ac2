package vodnode

import (
	"bytes"
	"testing"
	"time"

	"vodcluster/cdp/tsindex"
)

// TestDamagedPCRPlaysOn: a title whose bytes read, in its middle, as a PCR
// 9.6 hours ahead (damaged on disk or at the origin, no discontinuity
// flagged) plays on at its rate to its end: the index absorbs the leap.
// (The pacer waited for that PCR, its viewers frozen in silence until
// their session timed out.)
func TestDamagedPCRPlaysOn(t *testing.T) {
	o := newFakeOrigin(t)
	d := bytes.Clone(o.titles["short-001"])
	x, err := tsindex.BuildFrom(bytes.NewReader(d))
	if err != nil {
		t.Fatal(err)
	}
	at := x.PCRs[len(x.PCRs)/2].Offset
	base := int64(34632 * 90000)
	d[at+6], d[at+7], d[at+8], d[at+9] = byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1)
	d[at+10] = byte(base<<7) | 0x7e
	o.titles["damaged-001"] = d
	n := startNode(t, startOrigin(t, o))
	url := nodeURL(n, mint(t, "pcr-leap", "damaged-001", "node-1", "", time.Minute), "damaged-001")
	c := dialRTSP(t, n)
	res := c.do("SETUP", url+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	if res := c.do("PLAY", url+"/", "Session", sessionID(res)); res.StatusCode != 200 {
		t.Fatalf("PLAY: %s", statusLine(res))
	}
	// The whole title comes in about its play time; a stream waiting for
	// the PCR would send nothing past the damaged packet for hours.
	c.c.SetReadDeadline(time.Now().Add(shortSeconds*time.Second + 20*time.Second))
	var got int64
	for got < int64(len(d)) {
		ch, b, err := c.frame()
		if err != nil {
			t.Fatalf("after %d of the title's %d bytes (the damaged PCR at %d): %v", got, len(d), at, err)
		}
		if ch == 0 && len(b) > 12 {
			got += int64(len(b) - 12) // RTP header of an MP2T packet, no CSRC or extension
		}
	}
}
