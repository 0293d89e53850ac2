package acm

import (
	"testing"

	pb "vodcluster/proto/vodcluster/v1"
)

// A viewer placed with a fill: until the node reports the fill, the
// manager keeps it in the node's view ("reserved"); once a report has
// shown it, a report without the title means the fill is gone from the
// node (it failed): the view drops it while the viewer still plays what
// the fill left, so the next viewer is not sent there as if the node
// held or filled the title.
func TestFailedFillLeavesTheNodesView(t *testing.T) {
	e := newManager(t, "", nil)
	n := e.startNode("n1", nodeOpts{rtsp: "127.0.0.1:7001"})
	sid := e.admitOne("t1")
	if s := e.session(sid); s.GetNodeId() != "n1" {
		t.Fatalf("session %+v, want on n1", s)
	}
	e.nextReport("n1")
	if f := e.fill("n1", "t1"); f == nil || f.State != "reserved" {
		t.Fatalf("fill of t1 on n1 before the node shows it: %+v, want reserved", f)
	}
	if err := n.event(sid, pb.SessionEvent_KIND_STARTED); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.titles = []*pb.StoredTitle{{TitleId: "t1", SizeBytes: 1_500_000, StoredBytes: 300_000, Filling: true, Sessions: 1}}
	n.mu.Unlock()
	e.nextReport("n1")
	e.nextReport("n1")
	if f := e.fill("n1", "t1"); f == nil || f.State != "filling" {
		t.Fatalf("fill of t1 on n1 the node shows: %+v, want filling", f)
	}
	n.mu.Lock()
	n.titles = nil // the fill failed; the viewer plays on to where it stopped
	n.mu.Unlock()
	e.nextReport("n1")
	e.nextReport("n1")
	if f := e.fill("n1", "t1"); f != nil {
		t.Fatalf("fill of t1 on n1 after it failed there: %+v, want none", f)
	}
	for _, r := range e.placement("n1").GetReplicas() {
		if r.GetTitleId() == "t1" {
			t.Fatalf("placement lists t1 on n1 after its fill failed: %+v", r)
		}
	}
}
