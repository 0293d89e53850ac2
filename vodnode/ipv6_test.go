package vodnode

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestGStreamerOverIPv6UDP: a node listening on IPv6 describes its titles
// with "c=IN IP6 ::" (MP2T and elementary-stream mode), and GStreamer's
// rtspsrc plays one over UDP to the end. The c= line said IN IP4 0.0.0.0
// whatever the node's family: rtspsrc opens its UDP sockets for the
// family it names, bound IPv4 ones, and failed at once sending its RTCP
// to the node ("Invalid address family"), the pipeline never playing.
func TestGStreamerOverIPv6UDP(t *testing.T) {
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		t.Skip("gst-launch-1.0 not installed")
	}
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	l.Close()
	t.Parallel() // real-time bound: overlaps the other real-client tests
	o := newFakeOrigin(t)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.ManagerAddr = maddr; n.RTSPListen = "[::1]:0" })
	c := dialRTSP(t, n)
	for _, u := range []string{
		nodeURL(n, mint(t, "sdp-ts", "short-001", "node-1", "", time.Minute), "short-001"),
		esURL(n, mint(t, "sdp-es", "short-001", "node-1", "", time.Minute), "short-001"),
	} {
		res := c.do("DESCRIBE", u)
		if res.StatusCode != 200 || !strings.Contains(string(res.Body), "\r\nc=IN IP6 ::\r\n") || strings.Contains(string(res.Body), "IP4") {
			t.Errorf("DESCRIBE %s over IPv6: %s\n%s", u, statusLine(res), res.Body)
		}
	}
	gstPlay(t, n, m, "gst-ipv6-udp", "short-002", "udp", shortSeconds, []string{"tsdemux", "!", "fakesink"})
}
