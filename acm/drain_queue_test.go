package acm

import (
	"context"
	"slices"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// A node's drain state (its drain command) reaches it, before the
// commands queued for it, at its registration and at an operator's
// change, however full its command queue is; only the latest state is
// sent. With the queue full (cmdQueue commands, queued while the node
// was away), the drain command was not sent at all, only logged: a
// drained node that restarted (a node clears its own drain flag when it
// registers) took new sessions again.
func TestDrainReachesTheNodeWhateverItsQueueHolds(t *testing.T) {
	ctx := context.Background()
	reg := func(t *testing.T, e *env) {
		t.Helper()
		if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n1", RtspAddr: "127.0.0.1:1",
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	drain := func(t *testing.T, e *env, on bool) {
		t.Helper()
		if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n1", Draining: ptr(on)}); err != nil {
			t.Fatal(err)
		}
	}
	// told checks that the node, once it received the queued evictions,
	// was sent the drain command of want before the first of them, and
	// no other drain state.
	told := func(t *testing.T, rec *cmdRecorder, want bool) {
		t.Helper()
		waitFor(t, 5*time.Second, "the queued evictions", func() bool { return rec.evicts() >= cmdQueue })
		got := rec.list()
		first := slices.IndexFunc(got, func(c *pb.NodeCommand) bool { return c.GetEvict() != nil })
		if !slices.ContainsFunc(got[:first], func(c *pb.NodeCommand) bool { return c.GetDrain() != nil }) {
			t.Fatalf("no drain command before the queued commands (first %v)", got[0])
		}
		for _, c := range got {
			if d := c.GetDrain(); d != nil && d.GetDrain() != want {
				t.Fatalf("drain command of %v, want only %v", d.GetDrain(), want)
			}
		}
	}

	t.Run("registration", func(t *testing.T) {
		e := newManager(t, "", nil)
		reg(t, e)
		drain(t, e, true)
		before := &cmdRecorder{}
		n := e.openStream("n1", before)
		waitFor(t, 5*time.Second, "the drain command", func() bool {
			return slices.ContainsFunc(before.list(), func(c *pb.NodeCommand) bool { return c.GetDrain().GetDrain() })
		})
		n.stop() // the node is cut off, then restarts
		waitFor(t, 5*time.Second, "the stream's sender to end", func() bool {
			e.m.mu.Lock()
			defer e.m.mu.Unlock()
			return e.m.nodes["n1"].streamCancel == nil
		})
		e.fillQueue("n1") // commands for it pile up meanwhile
		reg(t, e)
		rec := &cmdRecorder{}
		e.openStream("n1", rec)
		told(t, rec, true)
	})

	t.Run("operator's change", func(t *testing.T) {
		e := newManager(t, "", nil)
		reg(t, e) // no stream yet: its commands wait
		e.fillQueue("n1")
		drain(t, e, true)
		drain(t, e, false)
		drain(t, e, true)
		rec := &cmdRecorder{}
		e.openStream("n1", rec)
		told(t, rec, true)
	})
}

// A drain command a stream's sender had taken and could not send (its
// Send failed) is due again with the node's drain state as it is, unless
// a newer one is due: not sent again, the node missed it until the drain
// next changed, and one of before sent after a newer state would leave
// the node in the old one.
func TestDrainOfACommandBatchDueAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change, when set, is the drain state the operator sets while the
		// old stream's Send is held; sent: the new stream sent it then.
		change *bool
		sent   bool
	}{
		{name: "no change"},
		{name: "changed, not sent yet", change: ptr(false)},
		{name: "changed and sent", change: ptr(false), sent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newManager(t, "", nil)
			ctx := context.Background()
			if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001",
				Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n", Draining: ptr(true)}); err != nil {
				t.Fatal(err)
			}
			e.m.mu.Lock()
			ns := e.m.nodes["n"]
			e.m.mu.Unlock()
			st, done := e.holdCommands(ns) // holds the registration's protect command, the drain behind it
			want := true
			var got []*pb.NodeCommand // what the node is sent, in order
			if tc.change != nil {
				want = *tc.change
				if _, err := e.admin.SetNode(ctx, &pb.SetNodeRequest{NodeId: "n", Draining: tc.change}); err != nil {
					t.Fatal(err)
				}
				if tc.sent {
					got = e.due(ns)
				}
			}
			e.releaseHeld(st, done)
			got = append(got, e.due(ns)...)
			var last *pb.DrainCommand
			for _, c := range got {
				if d := c.GetDrain(); d != nil {
					last = d
				}
			}
			if last == nil || last.GetDrain() != want {
				t.Fatalf("commands for the node %v: its last drain command %v, want drain %v", got, last, want)
			}
		})
	}
}
