package vodnode

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// TestEvictCommandRemovesAPartial: the manager's EvictCommand for a title
// the node keeps only a partial fill of (a prefetch cut short by the
// origin) removes the partial's files; the next report lists no partial,
// and the title's next fill starts from its first byte.
func TestEvictCommandRemovesAPartial(t *testing.T) {
	o := newFakeOrigin(t)
	o.fail.Store(true) // the first chunk, then DATA_LOSS
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	size := int64(len(o.titles["sample-002"]))
	n := startNode(t, startOrigin(t, o), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 50 * time.Millisecond
		n.FillRetryFor = 300 * time.Millisecond
		n.Capacity = Capacity{EgressBps: 1e9, DiskBytes: 4 * size}
	})
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-002"}}}
	waitFor(t, 10*time.Second, "the partial in a report", func() bool {
		ps := m.lastReport().GetPartials()
		return len(ps) == 1 && ps[0].GetTitleId() == "sample-002"
	})
	dir := filepath.Join(n.DataDir, "titles")
	part := filepath.Join(dir, "sample-002.ts.part")
	if st, err := os.Stat(part); err != nil || st.Size() == 0 {
		t.Fatalf("partial file before the eviction: %v %v", st, err)
	}

	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Evict{Evict: &pb.EvictCommand{TitleId: "sample-002"}}}
	waitFor(t, 5*time.Second, "the partial gone from the store", func() bool { return len(n.store.Partials()) == 0 })
	for _, f := range []string{part, part + ".meta"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s after the eviction: %v", filepath.Base(f), err)
		}
	}
	if used, partial, _ := n.store.Usage(); used != 0 || partial != 0 {
		t.Errorf("disk after the eviction: %d bytes used, %d in partials; want 0", used, partial)
	}
	waitFor(t, 5*time.Second, "a report without the partial", func() bool { return len(m.lastReport().GetPartials()) == 0 })
	if r := m.lastReport(); len(r.GetTitles()) != 0 || r.GetDiskFreeBytes() != 4*size || r.GetDiskUsedBytes() != 0 {
		t.Errorf("report after the eviction: titles %v, free %d, used %d; want none, %d, 0", r.GetTitles(), r.GetDiskFreeBytes(), r.GetDiskUsedBytes(), 4*size)
	}

	// Nothing left to resume: the next fill fetches from the first byte.
	o.fail.Store(false)
	fetches := o.fetchCount("sample-002")
	m.cmds <- &pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: "sample-002"}}}
	waitComplete(t, n, "sample-002")
	if offs := o.fetchOffsets("sample-002")[fetches:]; len(offs) != 1 || offs[0] != 0 {
		t.Errorf("fetches of the fill after the eviction from %v, want one from 0", offs)
	}
}

// The operator's eviction of a prefetch being started to resume a
// partial fill (the node asking the origin for the title, its fill not
// registered yet) removes the partial too, as it does once the fill has
// registered: the title's bytes were kept, to be resumed by the title's
// next fill, after `vodctl evict` had answered that the prefetch was
// cancelled.
func TestOperatorEvictOfAPrefetchBeingStartedRemovesItsPartial(t *testing.T) {
	o := &askHeldOrigin{fakeOrigin: newFakeOrigin(t), asked: make(chan struct{}, 1), release: make(chan struct{})}
	o.pass.Store(true)
	o.fail.Store(true) // the first chunk, then DATA_LOSS: a partial
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	oaddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterOriginServer(s, o) })
	const id = "sample-002"
	size := int64(len(o.titles[id]))
	n := startNode(t, oaddr, func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 50 * time.Millisecond
		n.FillRetryFor = 300 * time.Millisecond
		n.Capacity = Capacity{EgressBps: 1e9, DiskBytes: 4 * size}
	})
	waitFor(t, 5*time.Second, "registration", func() bool { return m.registrations() > 0 })
	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: id}}})
	waitFor(t, 10*time.Second, "the partial", func() bool { ps := n.store.Partials(); return len(ps) == 1 && ps[0].ID == id })

	o.pass.Store(false)
	o.fail.Store(false)
	fetches := o.fetchCount(id)
	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Prefetch{Prefetch: &pb.PrefetchCommand{TitleId: id}}})
	select {
	case <-o.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the prefetch did not ask the origin for the title")
	}
	n.mgr.command(&pb.NodeCommand{Command: &pb.NodeCommand_Evict{Evict: &pb.EvictCommand{TitleId: id, Reason: evictReasonOperator}}})
	close(o.release)
	// The run ends, then carries the eviction out (evictStarted).
	waitFor(t, 10*time.Second, "the partial removed by the operator's eviction of the prefetch resuming it", func() bool {
		return len(n.store.Partials()) == 0
	})
	part := filepath.Join(n.DataDir, "titles", id+".ts.part")
	for _, f := range []string{part, part + ".meta"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s after the eviction: %v", filepath.Base(f), err)
		}
	}
	if got := o.fetchCount(id); got != fetches {
		t.Errorf("%d fetches of the title after the eviction, want none", got-fetches)
	}
	if used, partial, _ := n.store.Usage(); used != 0 || partial != 0 {
		t.Errorf("disk after the eviction: %d bytes used, %d in partials; want 0", used, partial)
	}
}
