package vodnode

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// An INVALID_ARGUMENT that is no configuration mistake was logged as one:
// a load report refused on the heartbeat stream (the manager's "report for
// node X on the stream of node Y") and a registration refused for what the
// node's store listed both read "the manager refuses this node's
// registration: fix the node's configuration (advertise_host, the listen
// addresses, capacity, weight)". The log gives the manager's reason, and
// the advice only where that reason names a setting of the node
// (TestRegistrationRefusedIsAnError).
func TestManagerRefusalLogGivesTheReason(t *testing.T) {
	for _, tc := range []struct {
		name     string
		register error // the manager's answer to Register
		report   error // its answer to the first load report
		want     string
		reason   string
	}{
		{
			name:   "report of another node",
			report: status.Error(codes.InvalidArgument, `report for node "node-9" on the stream of node "node-1"`),
			want:   `level=ERROR msg="the manager refuses this node's load report on its heartbeat stream; registering again"`,
			reason: `report for node \"node-9\" on the stream of node \"node-1\"`,
		},
		{
			name:     "stored title without id",
			register: status.Error(codes.InvalidArgument, "stored title without title_id"),
			want:     `level=ERROR msg="the manager refuses this node's registration; retrying"`,
			reason:   `reason="stored title without title_id"`,
		},
		{
			name:     "weight",
			register: status.Error(codes.InvalidArgument, "weight 70000 out of 0..65535 (IPVS's range; 0 = the default, 100)"),
			want:     `level=ERROR msg="the manager refuses this node's registration: fix the node's weight (weight: 0 to 65535); retrying"`,
			reason:   `weight 70000 out of 0..65535`,
		},
		{
			name:     "capacity",
			register: status.Error(codes.InvalidArgument, "capacity: egress_bps must be > 0, max_sessions and disk_bytes >= 0"),
			want:     `level=ERROR msg="the manager refuses this node's registration: fix the node's capacity (egress_bps, max_sessions, disk_bytes); retrying"`,
			reason:   `egress_bps must be > 0`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeManager()
			m.refuse, m.refuseReport = tc.register, tc.report
			maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
			var log logtest.Buffer
			startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
				n.ManagerAddr = maddr
				n.Logger = slog.New(slog.NewTextHandler(&log, nil))
			})
			waitFor(t, 10*time.Second, "the refusal logged", func() bool { return strings.Contains(log.String(), tc.want) })
			out := log.String()
			if !strings.Contains(out, tc.reason) || strings.Contains(out, "advertise_host") || strings.Contains(out, "manager link down") {
				t.Fatalf("log:\n%s\nwant %s with the reason %s and no other advice", out, tc.want, tc.reason)
			}
		})
	}
}
