package vodnode

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTransportLists: a Transport list is served by its first entry the
// node knows, wherever the entries it does not know (other profiles,
// multicast, record mode, no client port, a descending port or channel
// range) stand in it: before, after,
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
		"RTP/AVP;unicast;client_port=5009-5008", // descending
		"RTP/AVP/TCP;unicast;interleaved=3-2",
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
	// A list over several Transport lines is one list (RFC 2326 §4.2).
	url = nodeURL(n, mint(t, "tl-lines", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=0", "Transport", unknown[0], "Transport", "MP2T/RTP/TCP;unicast")
	if tr := res.Header["Transport"]; res.StatusCode != 200 || len(tr) != 1 || !strings.HasPrefix(tr[0], "MP2T/RTP/TCP;unicast;") {
		t.Errorf("a list over two Transport lines: %s %v, want MP2T/RTP/TCP from the second", statusLine(res), tr)
	}
}

// TestInterleavedChannels: a pair that does not fit the $ frame's channel
// byte (255, RTCP on 256) is 461, which leaves the token for the
// client's next SETUP; an odd pair is served on the channels asked for,
// and a pair overlapping another session's on the connection is 461.
func TestInterleavedChannels(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	c := dialRTSP(t, n)
	url1 := nodeURL(n, mint(t, "il-1", "sample-001", "node-1", "", time.Minute), "sample-001") + "/trackID=0"
	if res := c.do("SETUP", url1, "Transport", "RTP/AVP/TCP;unicast;interleaved=255"); res.StatusCode != 461 {
		t.Fatalf("interleaved=255: %s, want 461", statusLine(res))
	}
	res := c.do("SETUP", url1, "Transport", "RTP/AVP/TCP;unicast;interleaved=1-2")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP with the same token after a 461: %s", statusLine(res))
	}
	if tr := res.Header["Transport"]; len(tr) != 1 || !strings.Contains(tr[0], "interleaved=1-2") {
		t.Errorf("Transport %v, want interleaved=1-2", tr)
	}
	url2 := nodeURL(n, mint(t, "il-2", "sample-002", "node-1", "", time.Minute), "sample-002") + "/trackID=0"
	if res := c.do("SETUP", url2, "Transport", "RTP/AVP/TCP;unicast;interleaved=2-3"); res.StatusCode != 461 {
		t.Fatalf("a pair overlapping another session's: %s, want 461", statusLine(res))
	}
	res = c.do("SETUP", url2, "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP without a pair: %s", statusLine(res))
	}
	if tr := res.Header["Transport"]; len(tr) != 1 || !strings.Contains(tr[0], "interleaved=4-5") {
		t.Errorf("Transport %v, want the first free pair 4-5", tr)
	}
	// An entry whose pair is taken is skipped for the list's next one
	// (set-top boxes ask 0-1 for every session of their connection).
	for i, c2 := range []struct{ list, want string }{
		{"RTP/AVP/TCP;unicast;interleaved=1-2,RTP/AVP/TCP;unicast;interleaved=6-7", "RTP/AVP/TCP;unicast;interleaved=6-7"},
		{"RTP/AVP/TCP;unicast;interleaved=4-5,RTP/AVP/TCP;unicast", "RTP/AVP/TCP;unicast;interleaved=8-9"},
		{"RTP/AVP/TCP;unicast;interleaved=0-1,RTP/AVP;unicast;client_port=40000-40001", "RTP/AVP;unicast;"},
	} {
		url := nodeURL(n, mint(t, fmt.Sprintf("il-next-%d", i), "sample-001", "node-1", "", time.Minute), "sample-001") + "/trackID=0"
		res := c.do("SETUP", url, "Transport", c2.list)
		if tr := res.Header["Transport"]; res.StatusCode != 200 || len(tr) != 1 || !strings.HasPrefix(tr[0], c2.want) {
			t.Errorf("%s: %s %v, want %s...", c2.list, statusLine(res), tr, c2.want)
		}
	}
	url5 := nodeURL(n, mint(t, "il-taken", "sample-001", "node-1", "", time.Minute), "sample-001") + "/trackID=0"
	res = c.do("SETUP", url5, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1,RTP/AVP/TCP;unicast;interleaved=6-7")
	if res.StatusCode != 461 || !strings.Contains(string(res.Body), "interleaved channels 0-1 in use") {
		t.Errorf("every entry's pair taken: %s %q, want 461 naming the first", statusLine(res), res.Body)
	}
}

// TestESTrackTransportList: a further track of an elementary-stream
// session is set up with the first entry of its Transport list that has
// the other tracks' transport and free channels; only a list with none
// is 461.
func TestESTrackTransportList(t *testing.T) {
	o := newFakeOrigin(t)
	n := startNode(t, startOrigin(t, o))
	c := dialRTSP(t, n)
	url := esURL(n, mint(t, "es-list", "sample-001", "node-1", "", time.Minute), "sample-001")
	res := c.do("SETUP", url+"/trackID=1", "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP of the first track: %s", statusLine(res))
	}
	id := sessionID(res)
	if res := c.do("SETUP", url+"/trackID=2", "Session", id, "Transport", "RTP/AVP;unicast;client_port=40000-40001,RTP/AVP/UDP;unicast;client_port=40002-40003"); res.StatusCode != 461 ||
		!strings.Contains(string(res.Body), "same transport") {
		t.Errorf("a list with no TCP entry: %s %q, want 461 (the same transport)", statusLine(res), res.Body)
	}
	res = c.do("SETUP", url+"/trackID=2", "Session", id, "Transport",
		"RTP/AVP;unicast;client_port=40000-40001,RTP/AVP/TCP;unicast;interleaved=0-1,RTP/AVP/TCP;unicast;interleaved=4-5")
	if tr := res.Header["Transport"]; res.StatusCode != 200 || len(tr) != 1 || !strings.HasPrefix(tr[0], "RTP/AVP/TCP;unicast;interleaved=4-5") {
		t.Errorf("second track: %s %v, want RTP/AVP/TCP on 4-5 (UDP: another transport; 0-1: the first track's)", statusLine(res), tr)
	}
}
