package acm

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	pb "vodcluster/proto/vodcluster/v1"
)

// cmdRecorder keeps the commands a node's heartbeat stream delivers, in
// order (nodeOpts.onCommand).
type cmdRecorder struct {
	mu   sync.Mutex
	cmds []*pb.NodeCommand
}

func (r *cmdRecorder) add(c *pb.NodeCommand) {
	r.mu.Lock()
	r.cmds = append(r.cmds, c)
	r.mu.Unlock()
}

func (r *cmdRecorder) list() []*pb.NodeCommand {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cmds)
}

// evicts counts the EvictCommands recorded.
func (r *cmdRecorder) evicts() int {
	return len(slices.DeleteFunc(r.list(), func(c *pb.NodeCommand) bool { return c.GetEvict() == nil }))
}

// openStream opens a heartbeat stream for node id, registered already,
// whose commands go to rec; it is broken at the test's end.
func (e *env) openStream(id string, rec *cmdRecorder) *fakeNode {
	e.t.Helper()
	n := &fakeNode{t: e.t, id: id, nc: e.nc, cmds: make(chan *pb.NodeCommand, 64), diskFree: 1 << 40, onCommand: rec.add}
	n.heartbeat()
	e.t.Cleanup(n.stop)
	return n
}

// fillQueue queues evictions for node id, registered, until its command
// queue is full (cmdQueue commands).
func (e *env) fillQueue(id string) {
	e.t.Helper()
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	ns := e.m.nodes[id]
	for i := len(ns.queue); i < cmdQueue; i++ {
		if !ns.push(evictCmd(fmt.Sprint("gone-", i), evictOperator)) {
			e.t.Fatalf("command %d refused", i)
		}
	}
}

// A node's pins (its protect command) reach it first at its registration
// and at a pin change, however full its command queue is. With the
// queue full (cmdQueue commands, none a protect command: queued while
// the node was away), the protect command was not sent at all, only
// logged: a restarted node knew no pin, and its own eviction could
// remove a pinned title.
func TestProtectReachesTheNodeWhateverItsQueueHolds(t *testing.T) {
	reg := func(t *testing.T, e *env) {
		t.Helper()
		if _, err := e.nc.Register(context.Background(), &pb.RegisterRequest{NodeId: "n1", RtspAddr: "127.0.0.1:1",
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	pin := func(t *testing.T, e *env, title string) {
		t.Helper()
		if _, err := e.admin.Pin(context.Background(), &pb.PlacementRequest{TitleId: title, NodeId: "n1"}); err != nil {
			t.Fatal(err)
		}
	}
	fill := func(e *env) { e.fillQueue("n1") }
	// firstProtect checks that the node, once it received the
	// evictions, was sent the protect command of want first, and no
	// other pin set after it.
	firstProtect := func(t *testing.T, rec *cmdRecorder, want ...string) {
		t.Helper()
		waitFor(t, 5*time.Second, "the queued evictions", func() bool { return rec.evicts() >= cmdQueue })
		got := rec.list()
		if p := got[0].GetProtect(); p == nil || !slices.Equal(p.GetTitleIds(), want) {
			t.Fatalf("first command %v, want the protect command of %v", got[0], want)
		}
		for _, c := range got[1:] {
			if p := c.GetProtect(); p != nil && !slices.Equal(p.GetTitleIds(), want) {
				t.Fatalf("protect command of %v after that of %v", p.GetTitleIds(), want)
			}
		}
	}

	t.Run("registration", func(t *testing.T) {
		e := newManager(t, "", nil)
		reg(t, e)
		pin(t, e, "t1")
		first := &cmdRecorder{}
		n := e.openStream("n1", first)
		waitFor(t, 5*time.Second, "the protect command", func() bool {
			return slices.ContainsFunc(first.list(), func(c *pb.NodeCommand) bool { return c.GetProtect() != nil })
		})
		n.stop() // the node is cut off, then restarts
		waitFor(t, 5*time.Second, "the stream's sender to end", func() bool {
			e.m.mu.Lock()
			defer e.m.mu.Unlock()
			return e.m.nodes["n1"].streamCancel == nil
		})
		fill(e) // commands for it pile up meanwhile
		reg(t, e)
		rec := &cmdRecorder{}
		e.openStream("n1", rec)
		firstProtect(t, rec, "t1")
	})

	t.Run("pin change", func(t *testing.T) {
		e := newManager(t, "", nil)
		reg(t, e) // no stream yet: its commands wait
		fill(e)
		pin(t, e, "t1")
		pin(t, e, "t2")
		rec := &cmdRecorder{}
		e.openStream("n1", rec)
		firstProtect(t, rec, "t1", "t2")
	})
}
