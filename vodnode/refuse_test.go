package vodnode

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestRefusalsReported: a valid token's session that the node refuses
// (461, 453, 503) is reported ENDED with the status at once, so the
// manager releases its reservation; the token is then spent. A token
// refused because its session already plays here reports nothing (that
// session goes on).
func TestRefusalsReported(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), withHTTP, func(n *Node) {
		n.ManagerAddr = maddr
		n.Capacity.MaxSessions = 1
	})
	// Registered first: a node clears its own drain flag when it
	// registers (the drain is the manager's order), which would undo the
	// SetDraining below. The first report comes after that.
	waitFor(t, 5*time.Second, "the first report", func() bool { return m.lastReport() != nil })
	c := dialRTSP(t, n)
	url := func(sid string) string {
		return nodeURL(n, mint(t, sid, "sample-001", "node-1", "", time.Minute), "sample-001")
	}

	// a SETUP refused for its Transport and retried at once with another
	// list is not a refusal
	retry := url("r-retry")
	if res := c.do("SETUP", retry+"/trackID=0", "Transport", "RTP/AVP;multicast"); res.StatusCode != 461 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	res := c.do("SETUP", retry+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast")
	if res.StatusCode != 200 {
		t.Fatalf("SETUP retried: %s", statusLine(res))
	}
	if res := c.do("TEARDOWN", retry+"/", "Session", sessionID(res)); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}

	u461 := url("r-461")
	if res := c.do("SETUP", u461+"/trackID=0", "Transport", "RTP/SAVP;unicast;client_port=5000-5001"); res.StatusCode != 461 {
		t.Fatalf("SETUP: %s", statusLine(res))
	}
	live := url("r-live")
	id := c.play(live)
	u453 := url("r-453")
	if res := c.do("SETUP", u453+"/trackID=0", "Transport", "RTP/AVP/TCP;unicast"); res.StatusCode != 453 {
		t.Fatalf("SETUP over MaxSessions: %s", statusLine(res))
	}
	if res := dialRTSP(t, n).do("DESCRIBE", live); res.StatusCode != 401 {
		t.Fatalf("DESCRIBE with a live token: %s", statusLine(res))
	}
	n.SetDraining(true)
	u503 := url("r-503")
	if res := c.do("DESCRIBE", u503); res.StatusCode != 503 {
		t.Fatalf("DESCRIBE while draining: %s", statusLine(res))
	}
	h503 := mint(t, "r-http", "sample-001", "node-1", "", time.Minute)
	if res, _ := get(t, httpURL(n, h503, "sample-001.ts")); res.StatusCode != 503 {
		t.Fatalf("HTTP while draining: %d", res.StatusCode)
	}
	for sid, want := range map[string]string{"r-461": "461", "r-453": "453", "r-503": "503", "r-http": "503"} {
		waitFor(t, 5*time.Second, "ENDED of "+sid, func() bool { return m.event(sid, pb.SessionEvent_KIND_ENDED) != nil })
		if e := m.event(sid, pb.SessionEvent_KIND_ENDED); !strings.Contains(e.GetReason(), want) || e.GetTitleId() != "sample-001" {
			t.Errorf("%s: ENDED %+v, want the reason to name %s", sid, e, want)
		}
		if e := m.event(sid, pb.SessionEvent_KIND_STARTED); e != nil {
			t.Errorf("%s: STARTED reported for a refused session", sid)
		}
	}
	if evs := m.eventsOf("r-retry", pb.SessionEvent_KIND_ENDED); len(evs) != 1 || evs[0].GetReason() != "teardown" {
		t.Errorf("retried SETUP: ENDED events %v, want one, teardown", evs)
	}
	n.SetDraining(false)
	if res := c.do("DESCRIBE", u461); res.StatusCode != 401 {
		t.Errorf("token reused after its refusal: %s", statusLine(res))
	}
	// the live session was not reported ended by the refused attempt
	if res := c.do("TEARDOWN", live+"/", "Session", id); res.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %s", statusLine(res))
	}
	waitFor(t, 5*time.Second, "ENDED of the live session", func() bool { return m.event("r-live", pb.SessionEvent_KIND_ENDED) != nil })
	if e := m.event("r-live", pb.SessionEvent_KIND_ENDED); e.GetReason() != "teardown" {
		t.Errorf("live session ENDED %+v, want teardown", e)
	}
}
