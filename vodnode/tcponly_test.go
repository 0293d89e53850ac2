package vodnode

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gortsplib/v4/pkg/base"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// withTCPOnly starts a node that sends RTSP media over TCP only.
func withTCPOnly(n *Node) { n.TCPOnly = true }

// TestTCPOnlyNode: a node with TCPOnly opens no UDP port, registers
// tcp_only, answers a SETUP that offers only UDP 461 with the reason
// (counted: vodnode_setups_udp_refused_total), and
// takes the same session's SETUP over TCP on the same connection (what
// players do after a 461), for a title's MPEG-TS and its elementary
// streams; a list with a TCP entry after UDP ones is served over TCP at
// once.
func TestTCPOnlyNode(t *testing.T) {
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), withTCPOnly, func(n *Node) { n.ManagerAddr = maddr })
	if n.udp != nil {
		t.Fatal("a tcp_only node opened UDP ports")
	}
	waitFor(t, 5*time.Second, "the registration", func() bool { return m.registrations() > 0 })
	m.mu.Lock()
	reg := m.registers[0]
	m.mu.Unlock()
	if !reg.GetTcpOnly() {
		t.Error("registered without tcp_only: the manager would send it SETUPs that offer only UDP")
	}

	url := nodeURL(n, mint(t, "tcp-only", "sample-001", "node-1", "", time.Minute), "sample-001")
	c := dialRTSP(t, n)
	for _, tr := range []string{
		"RTP/AVP;unicast;client_port=5000-5001",
		"MP2T/UDP;unicast;client_port=5002, MP2T/RTP/UDP;unicast;client_port=5004-5005",
	} {
		res := c.do("SETUP", url, "Transport", tr)
		if res.StatusCode != base.StatusUnsupportedTransport || !strings.Contains(string(res.Body), "TCP only") {
			t.Errorf("SETUP %s on a tcp_only node: %s, want 461 saying it sends over TCP only", tr, statusLine(res))
		}
	}
	metrics := prometheus.NewPedanticRegistry()
	metrics.MustRegister(nodeCollector{n})
	if got, err := testutil.GatherAndCount(metrics, "vodnode_setups_udp_refused_total"); err != nil || got != 1 {
		t.Fatalf("vodnode_setups_udp_refused_total: %d series (%v)", got, err)
	}
	if err := testutil.GatherAndCompare(metrics, strings.NewReader("# HELP vodnode_setups_udp_refused_total RTSP SETUPs that offered only UDP, answered 461 Unsupported Transport by this node, which has tcp_only (players then set up over TCP): how many players asked for UDP first.\n# TYPE vodnode_setups_udp_refused_total counter\nvodnode_setups_udp_refused_total 2\n"), "vodnode_setups_udp_refused_total"); err != nil {
		t.Errorf("after two SETUPs offering only UDP: %v", err)
	}
	res := c.do("SETUP", url, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1")
	if res.StatusCode != base.StatusOK {
		t.Fatalf("SETUP over TCP after the 461: %d %s", res.StatusCode, res.StatusMessage)
	}
	if tr := res.Header["Transport"]; len(tr) != 1 || !strings.HasPrefix(tr[0], "RTP/AVP/TCP;") || strings.Contains(tr[0], "server_port") {
		t.Errorf("Transport %q, want RTP/AVP/TCP without server ports", tr)
	}

	es := nodeURL(n, mint(t, "tcp-only-es", "sample-001", "node-1", "", time.Minute), "sample-001") + "/es/trackID=1"
	c3 := dialRTSP(t, n)
	if res := c3.do("SETUP", es, "Transport", "RTP/AVP;unicast;client_port=5008-5009"); res.StatusCode != base.StatusUnsupportedTransport || !strings.Contains(string(res.Body), "TCP only") {
		t.Errorf("SETUP of an elementary stream over UDP on a tcp_only node: %s, want 461", statusLine(res))
	}
	if res := c3.do("SETUP", es, "Transport", "RTP/AVP/TCP;unicast;interleaved=0-1"); res.StatusCode != base.StatusOK {
		t.Errorf("SETUP of an elementary stream over TCP after the 461: %s", statusLine(res))
	}

	c2 := dialRTSP(t, n)
	url2 := nodeURL(n, mint(t, "tcp-only-list", "sample-001", "node-1", "", time.Minute), "sample-001")
	res = c2.do("SETUP", url2, "Transport", "RTP/AVP;unicast;client_port=5006-5007, RTP/AVP/TCP;unicast")
	if res.StatusCode != base.StatusOK {
		t.Fatalf("SETUP with UDP then TCP: %d %s", res.StatusCode, res.StatusMessage)
	}
	if tr := res.Header["Transport"]; len(tr) != 1 || !strings.HasPrefix(tr[0], "RTP/AVP/TCP;") {
		t.Errorf("Transport %q, want the TCP entry", tr)
	}
}

// TestPlayersSetUpOverTCPOnATCPOnlyNode plays a title from a node with
// TCPOnly with real players left to their default transports, which offer
// UDP first: ffmpeg and ffprobe, and GStreamer's rtspsrc set up over TCP
// after the node's 461 and play (Debian's VLC has no RTSP client: it is
// built without live555). Behind a network that drops UDP,
// ffmpeg and ffprobe otherwise never fall back (libavformat has no UDP
// timeout unless -timeout is given), and rtspsrc waits 5 s before it does.
// The node has no UDP port: whatever played went over TCP.
func TestPlayersSetUpOverTCPOnATCPOnlyNode(t *testing.T) {
	t.Parallel() // real-time bound: overlaps the other real-client tests
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), withTCPOnly, func(n *Node) { n.ManagerAddr = maddr })

	t.Run("ffmpeg", func(t *testing.T) {
		url := nodeURL(n, mint(t, "ffmpeg-default", "sample-001", "node-1", "", time.Minute), "sample-001")
		r := runFFmpegArgs(t, 3, "-i", url) // no -rtsp_transport: UDP first
		if r.frames < 50 {
			t.Errorf("ffmpeg with its default transports decoded %d frames from a tcp_only node\n%s", r.frames, r.stderr)
		}
	})
	t.Run("ffprobe", func(t *testing.T) {
		if _, err := exec.LookPath("ffprobe"); err != nil {
			t.Skip("ffprobe not installed")
		}
		url := nodeURL(n, mint(t, "ffprobe-default", "sample-002", "node-1", "", time.Minute), "sample-002")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", url).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "h264") {
			t.Errorf("ffprobe with its default transports: %v\n%s", err, out)
		}
	})
	t.Run("gstreamer", func(t *testing.T) {
		if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
			t.Skip("gst-launch-1.0 not installed")
		}
		// protocols left out: udp-mcast, udp, tcp, in that order.
		url := nodeURL(n, mint(t, "gst-default", "short-001", "node-1", "", time.Minute), "short-001")
		ctx, cancel := context.WithTimeout(context.Background(), (shortSeconds+20)*time.Second)
		defer cancel()
		b, err := exec.CommandContext(ctx, "gst-launch-1.0", "-e", "rtspsrc", "location="+url, "!", "rtpmp2tdepay", "!", "tsdemux", "!", "fakesink").CombinedOutput()
		out := string(b)
		if (err != nil && !gstRace(out)) || !strings.Contains(out, "Got EOS") {
			t.Errorf("gst-launch-1.0 with rtspsrc's default protocols: %v\n%s", err, out)
		}
		waitFor(t, 5*time.Second, "ENDED", func() bool { return m.event("gst-default", pb.SessionEvent_KIND_ENDED) != nil })
		if e := m.event("gst-default", pb.SessionEvent_KIND_ENDED); e.GetReason() != "teardown" {
			t.Errorf("ENDED %+v, want reason teardown (played to its end)", e)
		}
	})
}
