package vodnode

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
	"vodcluster/vodnode/store"
)

// titleStatus returns title id as the node's load report lists it, ok
// false when it does not.
func titleStatus(n *Node, id string) (store.Status, bool) {
	for _, st := range n.Titles() {
		if st.ID == id {
			return st, true
		}
	}
	return store.Status{}, false
}

// The manager's EvictCommand of the operator (reason "operator": vodctl
// evict) cancels a prefetch under way that no viewer reads: the title
// leaves the node's report at once, its fill ends with its bytes dropped
// (no partial) and its room freed, counted with cause cancelled (in
// vodnode_fills_failed_total; it was counted as evicted). The
// planner's eviction of it is ignored (title in use): only the
// operator's cancels a fill.
func TestOperatorEvictCommandCancelsPrefetch(t *testing.T) {
	o := heldOrigin(t, 100_000)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.ManagerAddr = maddr; n.HeartbeatInterval = 50 * time.Millisecond })
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	const id = "sample-001"
	evict := func(reason string) {
		n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Evict{Evict: &pb.EvictCommand{TitleId: id, Reason: reason}}})
	}
	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: id}}})
	waitFor(t, 10*time.Second, "the prefetch held at its first 100 kB", func() bool {
		st, ok := titleStatus(n, id)
		return ok && st.Filling && st.Preemptible && st.Stored >= 90_000
	})

	evict("planner")
	if st, ok := titleStatus(n, id); !ok || !st.Filling {
		t.Fatalf("prefetch after the planner's eviction: %+v (listed %v), want still filling", st, ok)
	}
	evict("operator")
	if st, ok := titleStatus(n, id); ok {
		t.Fatalf("prefetch after the operator's eviction still listed: %+v", st)
	}
	waitFor(t, 10*time.Second, "the cancelled fill's end", func() bool { return len(n.store.FillsFailed()) > 0 })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(nodeCollector{n})
	if got := fillsFailedByCause(t, reg); got["cancelled"] != 1 || got["evicted"] != 0 {
		t.Fatalf("vodnode_fills_failed_total by cause %v: want the operator's cancel counted once as cancelled", got)
	}
	if ps := n.store.Partials(); len(ps) != 0 {
		t.Fatalf("partials %+v after the operator's eviction, want none", ps)
	}
	if used, _, _ := n.store.Usage(); used != 0 {
		t.Fatalf("disk used %d after the cancelled prefetch, want 0", used)
	}
}

// fillsFailedByCause returns vodnode_fills_failed_total as reg gathers
// it, by its cause label.
func fillsFailedByCause(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "vodnode_fills_failed_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cause" {
					by[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return by
}

// askHeldOrigin is a fakeOrigin whose GetTitle (asked before a fill is
// registered) signals asked and waits for release or the caller's end
// (with pass set, it answers at once).
type askHeldOrigin struct {
	*fakeOrigin
	asked, release chan struct{}
	pass           atomic.Bool // answers at once, holding nothing
}

func (o *askHeldOrigin) GetTitle(ctx context.Context, req *pb.GetTitleRequest) (*pb.Title, error) {
	if !o.pass.Load() {
		select {
		case o.asked <- struct{}{}:
		default:
		}
		select {
		case <-o.release:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	res, err := o.ListTitles(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, t := range res.GetTitles() {
		if t.GetId() == req.GetTitleId() {
			return t, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "no title %q", req.GetTitleId())
}

// The operator's eviction that reaches the node while its prefetch of the
// title is being started (the origin asked for the title, the fill not
// registered, so no fill to cancel yet: vodctl evict right after vodctl
// prefetch) stops it: no fill starts, nothing is fetched from the origin
// and no failure is reported. Before, the eviction found no title
// ("evict failed") and the prefetch went on to fill the whole title.
func TestOperatorEvictCommandStopsPrefetchBeingStarted(t *testing.T) {
	t.Run("once", func(t *testing.T) { evictPrefetchBeingStarted(t, 1) })
	// Given twice (sent again at the node's registration): both stopped.
	// Only the second was, and the first filled the whole title.
	t.Run("twice", func(t *testing.T) { evictPrefetchBeingStarted(t, 2) })
}

// evictPrefetchBeingStarted gives a node the manager's prefetch of a
// title times times, then the operator's eviction of it while each asks
// the origin for the title, and checks that nothing is filled.
func evictPrefetchBeingStarted(t *testing.T, times int) {
	o := &askHeldOrigin{fakeOrigin: newFakeOrigin(t), asked: make(chan struct{}, times), release: make(chan struct{})}
	oaddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterOriginServer(s, o) })
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, oaddr, func(n *Node) { n.ManagerAddr = maddr; n.HeartbeatInterval = 50 * time.Millisecond })
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	const id = "sample-001"
	for range times {
		n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: id}}})
	}
	for range times {
		select {
		case <-o.asked:
		case <-time.After(10 * time.Second):
			t.Fatal("the prefetch did not ask the origin for the title")
		}
	}
	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Evict{Evict: &pb.EvictCommand{TitleId: id, Reason: evictReasonOperator}}})
	close(o.release) // a prefetch not stopped goes on now
	waitFor(t, 10*time.Second, "the prefetch's start to end", func() bool {
		n.mgr.prefetches.mu.Lock()
		defer n.mgr.prefetches.mu.Unlock()
		return len(n.mgr.prefetches.runs) == 0
	})
	if st, ok := titleStatus(n, id); ok {
		t.Fatalf("title listed after the operator's eviction of its prefetch being started: %+v", st)
	}
	if got := o.fetchCount(id); got != 0 {
		t.Fatalf("%d fetches of the title from the origin, want none", got)
	}
	r := m.reportAfter(t, "a load report after the prefetch's end", func(*pb.LoadReport) bool { return true })
	for _, r := range append(m.allReports(), r) {
		if len(r.GetFailedFills()) > 0 {
			t.Fatalf("failed fills reported %v, want none: a prefetch stopped by the eviction is no failure", r.GetFailedFills())
		}
	}
	if used, _, _ := n.store.Usage(); used != 0 {
		t.Fatalf("disk used %d, want 0", used)
	}
}
