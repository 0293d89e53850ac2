package acm

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestSetupOnlyOverUDPMovesTheDescribedSession: a subscriber at its
// session limit (1) DESCRIBEs a title and is admitted on a node with
// tcp_only; its SETUP on the same connection offers only UDP, which that
// node cannot serve: it is admitted on a node that serves UDP and the
// DESCRIBE's session, whose viewer never reached its node, ends once the
// new one is placed. It was left reserved, counted at the limit: the
// SETUP was refused 403 "too many sessions".
func TestSetupOnlyOverUDPMovesTheDescribedSession(t *testing.T) {
	var log logtest.Buffer
	e := newManager(t, "", func(m *Manager) {
		m.MaxSessionsPerUser = 1
		m.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	e.startNode("tcp", nodeOpts{rtsp: "127.0.0.1:7001", tcpOnly: true})
	c := e.dialRTSP()
	if res := c.mustDo(base.Describe, "/vod/t2", basicHeader("demo", "demo")); res.StatusCode != base.StatusFound {
		t.Fatalf("DESCRIBE: %d %q", res.StatusCode, res.StatusMessage)
	}
	e.startNode("udp", nodeOpts{rtsp: "127.0.0.1:7003"})
	h := basicHeader("demo", "demo")
	h["Transport"] = base.HeaderValue{"RTP/AVP;unicast;client_port=5000-5001"}
	res := c.mustDo(base.Setup, "/vod/t2/trackID=0", h)
	if res.StatusCode != base.StatusFound || len(res.Header["Location"]) != 1 || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7003") {
		t.Fatalf("SETUP offering only UDP after a DESCRIBE admitted on the tcp_only node: %d %q %v, want 302 to the node that serves UDP", res.StatusCode, res.StatusMessage, res.Header["Location"])
	}
	ss := e.sessions()
	if len(ss) != 1 || ss[0].NodeId != "udp" {
		t.Fatalf("sessions %+v, want the one on the node that serves UDP", ss)
	}
	if got := e.reserved("tcp"); got != 0 {
		t.Errorf("%d bit/s still reserved on the tcp_only node", got)
	}
	if !strings.Contains(log.String(), `msg="same viewer moved to another node" reason="`+reasonMovedTransport+`"`) || !strings.Contains(log.String(), "node=tcp new_session=") {
		t.Errorf("no line for the move with its reason:\n%s", log.String())
	}
}

// TestSetupOnlyOverUDPSiteOnly: with site_only, a SETUP that offers only
// UDP from a viewer whose site's nodes all have tcp_only is refused 461
// at once, though a node of another site serves UDP: the viewer may not
// use it. It waited the queue deadline and got 453, which players do not
// answer by setting up over TCP.
func TestSetupOnlyOverUDPSiteOnly(t *testing.T) {
	e := newManager(t, "", func(m *Manager) {
		m.Sites = []Site{{Name: "north", Clients: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
		m.SiteOnly = true
		m.QueueDeadline = time.Minute // a refusal after it would fail the test's own bound
	})
	e.startNode("tcp", nodeOpts{rtsp: "127.0.0.1:7001", tcpOnly: true, site: "north"})
	e.startNode("udp", nodeOpts{rtsp: "127.0.0.1:7003", site: "south"})
	e.settled()
	h := basicHeader("demo", "demo")
	h["Transport"] = base.HeaderValue{"RTP/AVP;unicast;client_port=5000-5001"}
	res := e.dialRTSP().mustDo(base.Setup, "/vod/t1/trackID=0", h)
	if res.StatusCode != base.StatusUnsupportedTransport || !strings.Contains(res.StatusMessage, "TCP only") {
		t.Fatalf("SETUP offering only UDP from a site of tcp_only nodes: %d %q, want 461", res.StatusCode, res.StatusMessage)
	}
	h["Transport"] = base.HeaderValue{"RTP/AVP/TCP;unicast"}
	if res := e.dialRTSP().mustDo(base.Setup, "/vod/t1/trackID=0", h); res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7001") {
		t.Fatalf("SETUP over TCP: %d %q %v, want 302 to the site's node", res.StatusCode, res.StatusMessage, res.Header["Location"])
	}
}

// TestSetupOnlyOverUDPWhileTheUDPNodesAreOut: the front door answers a
// SETUP that offers only UDP 461 ("TCP only") only when every node the
// viewer may use has tcp_only. While the nodes that serve UDP are drained,
// at weight 0 or dead, or in the manager's first restore_grace (nodes may
// still be registering), it is refused as any request no node can take
// now (503 at once, or 453), never 461: a set-top box that can take only
// UDP would give up on a 461, told something untrue. So too with the UDP
// node cut off.
func TestSetupOnlyOverUDPWhileTheUDPNodesAreOut(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.QueueDeadline = 300 * time.Millisecond })
	e.startNode("tcp", nodeOpts{rtsp: "127.0.0.1:7001", tcpOnly: true})
	h := basicHeader("demo", "demo")
	h["Transport"] = base.HeaderValue{"RTP/AVP;unicast;client_port=5000-5001"}
	setup := func(when string) {
		t.Helper()
		res := e.dialRTSP().mustDo(base.Setup, "/vod/t1/trackID=0", h)
		if res.StatusCode != base.StatusServiceUnavailable && res.StatusCode != base.StatusNotEnoughBandwidth {
			t.Errorf("SETUP offering only UDP %s: %d %q, want a refusal for now (503 or 453)", when, res.StatusCode, res.StatusMessage)
		}
	}
	setup("in the manager's first restore_grace, a tcp_only node registered")
	udp := e.startNode("udp", nodeOpts{rtsp: "127.0.0.1:7003"})
	e.settled()
	e.setNode(&pb.SetNodeRequest{NodeId: "udp", Draining: ptr(true)})
	setup("with the node that serves UDP drained")
	e.setNode(&pb.SetNodeRequest{NodeId: "udp", Draining: ptr(false), Weight: ptr[int32](0)})
	setup("with the node that serves UDP at weight 0")
	e.setNode(&pb.SetNodeRequest{NodeId: "udp", Weight: ptr[int32](100)})
	if res := e.dialRTSP().mustDo(base.Setup, "/vod/t1/trackID=0", h); res.StatusCode != base.StatusFound || !strings.Contains(res.Header["Location"][0], "127.0.0.1:7003") {
		t.Fatalf("SETUP offering only UDP, the node back in service: %d %q, want 302 to it", res.StatusCode, res.StatusMessage)
	}
	if e.reserved("tcp") != 0 {
		t.Error("bit/s reserved on the tcp_only node")
	}
	udp.stop()
	waitFor(t, 5*time.Second, "the manager to see the stream break", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		return e.m.sched.Node("udp").Unreachable
	})
	setup("with the node that serves UDP cut off (its heartbeat stream broke)")
}

// TestSetupOnlyOverUDPAfterARestart: a manager restarted while its node
// that serves UDP is away (dead, or on its way back) knows it from the
// store: a SETUP that offers only UDP, the tcp_only node alone
// registered, is refused as one no node can take now (503 or 453, to try
// again), not 461, which a box that can take only UDP gives up on. It got
// 461 once the restarted manager's restore_grace had run: it knew only
// the tcp_only node. Once the operator forgets the node, it is 461.
func TestSetupOnlyOverUDPAfterARestart(t *testing.T) {
	dir := t.TempDir()
	e := newManager(t, dir, nil)
	e.startNode("tcp", nodeOpts{rtsp: "127.0.0.1:7001", tcpOnly: true})
	udp := e.startNode("udp", nodeOpts{rtsp: "127.0.0.1:7003"})
	udp.stop()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e = newManager(t, dir, func(m *Manager) { m.QueueDeadline = 300 * time.Millisecond })
	e.startNode("tcp", nodeOpts{rtsp: "127.0.0.1:7001", tcpOnly: true})
	e.settled()
	h := basicHeader("demo", "demo")
	h["Transport"] = base.HeaderValue{"RTP/AVP;unicast;client_port=5000-5001"}
	res := e.dialRTSP().mustDo(base.Setup, "/vod/t1/trackID=0", h)
	if res.StatusCode != base.StatusServiceUnavailable && res.StatusCode != base.StatusNotEnoughBandwidth {
		t.Fatalf("SETUP offering only UDP after a restart, the node that serves UDP away: %d %q, want a refusal for now (503 or 453)", res.StatusCode, res.StatusMessage)
	}
	if _, err := e.admin.ForgetNode(context.Background(), &pb.ForgetNodeRequest{NodeId: "udp"}); err != nil {
		t.Fatalf("forget of the node known only from the store: %v", err)
	}
	if res := e.dialRTSP().mustDo(base.Setup, "/vod/t1/trackID=0", h); res.StatusCode != base.StatusUnsupportedTransport {
		t.Fatalf("SETUP offering only UDP, the node that served UDP forgotten: %d %q, want 461", res.StatusCode, res.StatusMessage)
	}
}
