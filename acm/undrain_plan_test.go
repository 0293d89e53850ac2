package acm

import (
	"context"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node brought back into service by the operator (undrained, or given a
// weight again) is planned for at once: a title pinned to it while it was
// drained is prefetched there now. It waited for the next periodic plan
// (storage.plan_interval, 30 s by default; an hour here, so that without
// the plan the change starts the test times out).
func TestUndrainPlansAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out, in *pb.SetNodeRequest
	}{
		{"drain", &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(true)}, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(false)}},
		{"weight", &pb.SetNodeRequest{NodeId: "n1", Weight: ptr(int32(0))}, &pb.SetNodeRequest{NodeId: "n1", Weight: ptr(int32(100))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newManagerWith(t, "", unhinted(), quietStorage)
			n1 := e.startSimNode("n1", storageTitles, simOpts{disk: 5_000_000})
			e.setNode(tc.out)
			waitFor(t, 5*time.Second, "n1 out of service", func() bool {
				e.m.mu.Lock()
				defer e.m.mu.Unlock()
				return !e.m.sched.InService(e.m.sched.Node("n1"))
			})
			if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: "t1", NodeId: "n1"}); err != nil {
				t.Fatal(err)
			}
			// The pin's own plan, with n1 out of service, is done first
			// (taken from the kick channel, then planMu free).
			waitFor(t, 5*time.Second, "the pin's plan", func() bool { return len(e.m.planKick) == 0 })
			e.m.planMu.Lock() // after the plan in progress
			c := n1.count("prefetch t1")
			e.m.planMu.Unlock()
			if c != 0 {
				t.Fatalf("n1 out of service got %d prefetch of t1", c)
			}
			e.setNode(tc.in)
			n1.waitCommand(t, "prefetch t1", 1)
		})
	}
}
