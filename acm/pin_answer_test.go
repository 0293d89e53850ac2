package acm

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// The answer to a pin says what the pin set going: the fetch of the
// title from the origin when the node (or, pinned to the cluster, every
// node) lacks it, and the lifting of the operator's eviction hold there
// (the pin lifts it: the hold is over).
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
		{"held off the node", "t3", "n1", "pinned; the eviction hold there is lifted: fetching it there from the origin (vodctl fills shows the fill)", true, true},
		{"to the cluster, on no node", "q", "", "pinned; no node holds it: fetching it from the origin (vodctl fills shows the fill)", true, false},
	} {
		ack, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: c.title, NodeId: c.node})
		if err != nil || ack.GetMessage() != c.msg || ack.GetFetching() != c.fetching || ack.GetHoldOverridden() != c.overridden {
			t.Errorf("pin %s (%s): %v %v, want %q, fetching %v, hold_overridden %v", c.title, c.what, ack, err, c.msg, c.fetching, c.overridden)
		}
	}
	e.m.mu.Lock()
	held := e.m.rep.Held("n1", "t3", e.m.now())
	e.m.mu.Unlock()
	if held {
		t.Errorf("t3 still held off n1 after its pin there")
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

// TestPinLiftsStoredEvictionHolds: a pin is the operator's later word
// over an eviction by hand: the hold that kept the title off the node
// ends, in the Replicator and in the store (a restarted manager does not
// bring it back), for a pin to the node, and for a pin to the cluster on
// every node. The hold outlived the pin, and an unpin put it back in
// force until evict_hold ran out.
func TestPinLiftsStoredEvictionHolds(t *testing.T) {
	e := newManagerWith(t, "", unhinted(), quietStorage)
	e.startSimNode("n1", storageTitles, simOpts{held: []*pb.StoredTitle{stored("t1"), stored("t2")}})
	waitFor(t, 5*time.Second, "n1's report", func() bool {
		e.m.mu.Lock()
		defer e.m.mu.Unlock()
		ns := e.m.nodes["n1"]
		return ns != nil && ns.reported && ns.titles["t1"] != nil && ns.titles["t2"] != nil
	})
	ctx := context.Background()
	for _, title := range []string{"t1", "t2"} {
		if _, err := e.admin.Evict(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"}); err != nil {
			t.Fatalf("evict %s: %v", title, err)
		}
	}
	stored := func() []string {
		hs, err := e.m.readHolds(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hs {
			out = append(out, h.Node+"/"+h.Title)
		}
		slices.Sort(out)
		return out
	}
	if h := stored(); !slices.Equal(h, []string{"n1/t1", "n1/t2"}) {
		t.Fatalf("stored holds after the evictions: %v", h)
	}
	ack, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"})
	if err != nil || !strings.Contains(ack.GetMessage(), "the eviction hold there is lifted") || !ack.GetHoldOverridden() {
		t.Fatalf("pin t1 n1: %v %v, want the hold lifted", ack, err)
	}
	if h := stored(); !slices.Equal(h, []string{"n1/t2"}) {
		t.Fatalf("stored holds after the pin of t1 to n1: %v, want t2's alone", h)
	}
	ack, err = e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: "t2"})
	if err != nil || !strings.Contains(ack.GetMessage(), "its eviction holds on n1 are lifted") {
		t.Fatalf("pin t2 to the cluster: %v %v, want n1's hold lifted", ack, err)
	}
	if h := stored(); len(h) != 0 {
		t.Fatalf("stored holds after the pin of t2 to the cluster: %v, want none", h)
	}
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	if hs := e.m.rep.Holds(e.m.now()); len(hs) != 0 {
		t.Fatalf("holds after the pins: %v", hs)
	}
}
