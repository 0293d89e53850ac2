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
	const interval = 8 * time.Second
	o := newFakeOrigin(t)
	m := newFakeManager()
	m.interval = interval
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = interval
	})
	waitFor(t, 10*time.Second, "the report at registration", func() bool { return m.lastReport() != nil })
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-002"}}}
	waitComplete(t, n, "sample-002")
	ended := time.Now() // the fill ended before
	waitFor(t, 2*interval, "a report of the fill's end", func() bool { return titleEnded(m.lastReport(), "sample-002") })
	m.mu.Lock()
	defer m.mu.Unlock()
	k := len(m.reports) - 1
	for k > 0 && titleEnded(m.reports[k-1], "sample-002") {
		k--
	}
	if k == 0 {
		t.Fatal("the fill's end in the report at registration")
	}
	r, prev := m.reports[k], m.reports[k-1]
	if st := titleIn(r, "sample-002"); st.GetStoredBytes() != st.GetSizeBytes() ||
		st.GetSizeBytes() != int64(len(o.titles["sample-002"])) || r.GetActiveFills() != 0 {
		t.Fatalf("report after the fill: %v, active fills %d", st, r.GetActiveFills())
	}
	// Reported at once: when the fill ended (before the test saw it
	// complete), or half an interval after the report before if that is
	// later; within a quarter interval of that on a loaded machine, and
	// so long before the next heartbeat (an interval after the report
	// before) unless the fill ended in the last quarter of the interval
	// (8 s: a fill, of a few MB from a local origin, that took 6 s).
	prevAt := time.UnixMilli(prev.GetAtUnixMs())
	due := prevAt.Add(interval / 2)
	if ended.After(due) {
		due = ended
	}
	at := time.UnixMilli(r.GetAtUnixMs())
	if late := at.Sub(due); late > interval/4 {
		t.Errorf("the fill's end reported %v after the report before it, %v after it was due (the fill seen ended %v after that report): at the next heartbeat (%v)",
			at.Sub(prevAt).Round(time.Millisecond), late.Round(time.Millisecond), ended.Sub(prevAt).Round(time.Millisecond), interval)
	}
	for i := 1; i < len(m.reports); i++ {
		if gap := time.Duration(m.reports[i].GetAtUnixMs()-m.reports[i-1].GetAtUnixMs()) * time.Millisecond; gap < interval/2-100*time.Millisecond {
			t.Errorf("reports %d and %d %v apart, under half the interval %v", i-1, i, gap, interval)
		}
	}
}

// titleEnded reports whether r lists title id as not filling.
func titleEnded(r *pb.LoadReport, id string) bool {
	st := titleIn(r, id)
	return st != nil && !st.GetFilling()
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
