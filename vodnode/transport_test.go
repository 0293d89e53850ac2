package vodnode

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTransportLists: a Transport list is served by its first entry the
// node knows, wherever the entries it does not know (other profiles,
// multicast, record mode, no client port) stand in it: before, after,
// around; each profile of RFC 2326 and of IPTV set-top boxes.
func TestTransportLists(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	c := dialRTSP(t, n)
	known := []string{
		"RTP/AVP;unicast;client_port=40000-40001",
		"RTP/AVP/UDP;unicast;client_port=40002-40003",
		"RTP/AVP/TCP;unicast;interleaved=0-1",
		"MP2T/RTP/UDP;unicast;client_port=40004-40005",
		"MP2T/RTP/TCP;unicast",
		"MP2T/UDP;unicast;destination=127.0.0.1;client_port=40006",
		"RAW/RAW/UDP;unicast;client_port=40008",
		"MP2T/H2221/UDP;unicast;client_port=40010",
	}
	unknown := []string{
		"X-UNKNOWN/PROFILE;unicast;client_port=5000-5001",
		"RTP/SAVP;unicast;client_port=5002-5003",
		"RTP/AVP;multicast;port=5004-5005",
		"RTP/AVP;unicast;client_port=5006-5007;mode=record",
		"MP2T/UDP;unicast",
	}
	i := 0
	for _, k := range known {
		profile, _, _ := strings.Cut(k, ";")
		for _, list := range [][]string{
			{unknown[0], k},
			{k, unknown[1]},
			{unknown[2], unknown[3], k, unknown[4]},
			{unknown[4], k, "RTP/AVP/TCP;unicast"}, // the first known entry wins
		} {
			i++
			url := nodeURL(n, mint(t, fmt.Sprintf("tl-%d", i), "sample-001", "node-1", "", time.Minute), "sample-001")
			res := c.do("SETUP", url+"/trackID=0", "Transport", strings.Join(list, ","))
			if res.StatusCode != 200 {
				t.Errorf("%q: %s", list, statusLine(res))
				continue
			}
			if tr := res.Header["Transport"]; len(tr) != 1 || !strings.HasPrefix(tr[0], profile+";unicast;") {
				t.Errorf("%q: granted %v, want %s", list, tr, profile)
			}
			if res := c.do("TEARDOWN", url+"/", "Session", sessionID(res)); res.StatusCode != 200 {
				t.Fatalf("TEARDOWN: %s", statusLine(res))
			}
		}
	}
	url := nodeURL(n, mint(t, "tl-none", "sample-001", "node-1", "", time.Minute), "sample-001")
	if res := c.do("SETUP", url+"/trackID=0", "Transport", strings.Join(unknown, ",")); res.StatusCode != 461 {
		t.Errorf("only unknown entries: %s, want 461", statusLine(res))
	}
}
