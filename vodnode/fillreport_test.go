package vodnode

import (
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// A fill that ends is reported to the manager before the next heartbeat:
// the manager counts the origin's channels in use from the load reports,
// and viewers waiting in its queue for a channel were held up to an
// interval (a second by default) after the fill had freed it. The report
// goes half an interval after the one before at the earliest, so that
// reports stay that far apart (a session missing from two in a row is
// ended by the manager as one whose ENDED was lost).
func TestFillEndReportedAtOnce(t *testing.T) {
	const interval = 6 * time.Second
	o := newFakeOrigin(t)
	m := newFakeManager()
	m.interval = interval
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = interval
	})
	waitFor(t, 10*time.Second, "the report at registration", func() bool { return m.lastReport() != nil })
	first := m.lastReport().GetAtUnixMs()
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-002"}}}
	waitComplete(t, n, "sample-002")
	waitFor(t, 10*time.Second, "a report of the fill's end", func() bool {
		st := titleIn(m.lastReport(), "sample-002")
		return st != nil && !st.GetFilling()
	})
	r := m.lastReport()
	if st := titleIn(r, "sample-002"); st.GetStoredBytes() != st.GetSizeBytes() ||
		st.GetSizeBytes() != int64(len(o.titles["sample-002"])) || r.GetActiveFills() != 0 {
		t.Fatalf("report after the fill: %v, active fills %d", st, r.GetActiveFills())
	}
	if after := time.Duration(r.GetAtUnixMs()-first) * time.Millisecond; after >= interval*5/6 {
		t.Errorf("the fill's end reported %v after the report before it: at the next heartbeat (%v)", after, interval)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := 1; i < len(m.reports); i++ {
		if gap := time.Duration(m.reports[i].GetAtUnixMs()-m.reports[i-1].GetAtUnixMs()) * time.Millisecond; gap < interval/2-100*time.Millisecond {
			t.Errorf("reports %d and %d %v apart, under half the interval %v", i-1, i, gap, interval)
		}
	}
}

// Fills ending more often than every half interval (a burst of prefetches,
// many cold titles) each ask for an early report, and each early report put
// the tick off an interval: the tick never came, and the egress stayed the
// one measured at registration (0) while the node sent bytes. It is
// measured anew once an interval has passed since the last measure.
func TestEgressMeasuredWhileFillsKeepEnding(t *testing.T) {
	const interval = time.Second
	m := newFakeManager()
	m.interval = interval
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = interval
	})
	waitFor(t, 10*time.Second, "the report at registration", func() bool { return m.lastReport() != nil })
	// Bytes sent and fills ending every quarter interval, for four
	// intervals (bounded: 16 rounds).
	tk := time.NewTicker(interval / 4)
	defer tk.Stop()
	for range 16 {
		<-tk.C
		n.httpBytes.Add(100_000) // 3.2 Mbit/s
		select {
		case n.fillEnded <- struct{}{}:
		default:
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var measured bool
	for _, r := range m.reports[1:] {
		measured = measured || r.GetEgressBps() > 0
	}
	if !measured {
		t.Fatalf("%d reports while the node sent 1.6 MB in %v, every one with egress 0", len(m.reports), 4*interval)
	}
}
