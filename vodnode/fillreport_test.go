package vodnode

import (
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// A fill that ends is reported to the manager at once, not at the next
// heartbeat: the manager counts the origin's channels in use from the
// load reports, and viewers waiting in its queue for a channel were held
// up to an interval (a second by default) after the fill had freed it.
// The heartbeat here is an hour, so only the report the fill's end sends
// can say the title is complete.
func TestFillEndReportedAtOnce(t *testing.T) {
	o := newFakeOrigin(t)
	m := newFakeManager()
	m.interval = time.Hour
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = time.Hour
	})
	waitFor(t, 10*time.Second, "the report at registration", func() bool { return m.lastReport() != nil })
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-002"}}}
	waitComplete(t, n, "sample-002")
	waitFor(t, 10*time.Second, "a report of the fill's end", func() bool {
		st := titleIn(m.lastReport(), "sample-002")
		return st != nil && !st.GetFilling()
	})
	r := m.lastReport()
	if st := titleIn(r, "sample-002"); st == nil || st.GetFilling() || st.GetStoredBytes() != st.GetSizeBytes() ||
		st.GetSizeBytes() != int64(len(o.titles["sample-002"])) || r.GetActiveFills() != 0 {
		t.Fatalf("report after the fill: %v, active fills %d", st, r.GetActiveFills())
	}
	m.mu.Lock()
	reports := len(m.reports)
	m.mu.Unlock()
	if reports > 3 { // registration, the fill's start is not reported, its end is
		t.Errorf("%d reports for one fill with an hour's heartbeat", reports)
	}
}
