package acm

import (
	"context"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// The answer to a pin says what the pin set going: the fetch of the
// title from the origin when the node (or, pinned to the cluster, every
// node) lacks it, and the lifting of the operator's eviction hold there.
// It said "pinned" alone, as for a title already there.
func TestPinAnswerSaysWhatItStarted(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1")}})
	waitFor(t, 5*time.Second, "n1's report", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes["n1"]
		return ns != nil && ns.reported && ns.titles["t1"] != nil
	})
	e.m.mu.Lock()
	e.m.rep.Evicted("n1", "t3", e.m.now()) // vodctl evict t3 n1 earlier: held off n1 for evict_hold
	e.m.mu.Unlock()
	for _, c := range []struct {
		what, title, node    string
		msg                  string // the whole answer
		fetching, overridden bool
	}{
		{"there already", "t1", "n1", "pinned", false, false},
		{"to the cluster, held by a node", "t1", "", "pinned", false, false},
		{"not there", "t2", "n1", "pinned; fetching it there from the origin (vodctl fills shows the fill)", true, false},
		{"held off the node", "t3", "n1", "pinned; the eviction hold there gives way to the pin while it stands: fetching it there from the origin (vodctl fills shows the fill)", true, true},
		{"to the cluster, on no node", "q", "", "pinned; no node holds it: fetching it from the origin (vodctl fills shows the fill)", true, false},
	} {
		ack, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: c.title, NodeId: c.node})
		if err != nil || ack.GetMessage() != c.msg || ack.GetFetching() != c.fetching || ack.GetHoldOverridden() != c.overridden {
			t.Errorf("pin %s (%s): %v %v, want %q, fetching %v, hold_overridden %v", c.title, c.what, ack, err, c.msg, c.fetching, c.overridden)
		}
	}
	// Said again: nothing started.
	if ack, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "t2", NodeId: "n1"}); err != nil || ack.GetMessage() != "already pinned" || ack.GetFetching() {
		t.Errorf("pin again: %v %v", ack, err)
	}
	// Pinned to the cluster with no node the planner can fetch it to (the
	// only one drained): not said to be fetched.
	if _, err := e.admin.SetNode(context.Background(), &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if ack, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "r"}); err != nil || ack.GetFetching() {
		t.Errorf("pin to the cluster with its only node drained: %v %v, want no fetch said", ack, err)
	}
}
