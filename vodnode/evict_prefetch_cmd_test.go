package vodnode

import (
	"testing"
	"time"

	"google.golang.org/grpc"

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
// (no partial) and its room freed, counted with cause evicted. The
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
	waitFor(t, 10*time.Second, "the cancelled fill's end", func() bool { return n.store.FillsFailed()["evicted"] == 1 })
	if ps := n.store.Partials(); len(ps) != 0 {
		t.Fatalf("partials %+v after the operator's eviction, want none", ps)
	}
	if used, _, _ := n.store.Usage(); used != 0 {
		t.Fatalf("disk used %d after the cancelled prefetch, want 0", used)
	}
}
