package acm

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// recordStream is a node's heartbeat stream whose Send hands each
// command to rec (the node gets it).
type recordStream struct {
	grpc.ServerStream
	rec *cmdRecorder
}

func (r *recordStream) Recv() (*pb.LoadReport, error) { return nil, io.EOF }

func (r *recordStream) Send(c *pb.NodeCommand) error {
	r.rec.add(c)
	return nil
}

// Commands a replaced stream's sender had taken and could not send, put
// back with no registration of the node in between (a newer stream
// opened without one), reach the node down the newer stream at once:
// put back without waking its sender, which had found nothing to send,
// they waited for the next command queued for the node.
func TestCommandsPutBackWakeTheNewerStreamsSender(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	ctx := context.Background()
	if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001",
		Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil {
		t.Fatal(err)
	}
	e.m.mu.Lock()
	ns := e.m.nodes["n"]
	e.m.mu.Unlock()
	st, done := e.holdCommands(ns) // takes the prefetch, never sends it

	// The newer stream, its sender waiting for commands (its first
	// wake-up taken already, the queue found empty).
	rec := &cmdRecorder{}
	e.m.mu.Lock()
	ns.stopStream()
	bctx, cancel := context.WithCancel(context.Background())
	ns.streamGen++
	gen := ns.streamGen
	ns.streamCancel = cancel
	e.m.mu.Unlock()
	bdone := make(chan struct{})
	go func() {
		defer close(bdone)
		e.m.sendCommands(bctx, &recordStream{rec: rec}, ns, gen)
	}()
	t.Cleanup(func() {
		cancel()
		<-bdone
	})

	e.releaseHeld(st, done)
	waitFor(t, 5*time.Second, "the prefetch of t3 down the newer stream", func() bool {
		for _, c := range rec.list() {
			if c.GetPrefetch().GetTitleId() == "t3" {
				return true
			}
		}
		return false
	})
}
