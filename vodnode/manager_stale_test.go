package vodnode

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// breakingManager is a fakeManager whose first heartbeat stream takes the
// node's first report, sends a drain and ends (the node's next send on it
// fails); the streams after it are fakeManager's, and second is closed as
// the second one opens.
type breakingManager struct {
	*fakeManager
	mu      sync.Mutex
	streams int
	second  chan struct{}
}

func (b *breakingManager) Heartbeat(s grpc.BidiStreamingServer[pb.LoadReport, pb.NodeCommand]) error {
	b.mu.Lock()
	b.streams++
	k := b.streams
	b.mu.Unlock()
	switch k {
	case 1:
		if _, err := s.Recv(); err != nil {
			return err
		}
		if err := s.Send(&pb.NodeCommand{Command: &pb.NodeCommand_Drain{Drain: &pb.DrainCommand{Drain: true}}}); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "stream broken by the test")
	case 2:
		close(b.second)
	}
	return b.fakeManager.Heartbeat(s)
}

// TestManagerLinkStaleCommandAfterReregistration: a command received on a
// heartbeat stream whose send then fails is carried out before the node
// registers again, never after: the registration clears the drain flag
// (the drain is the order of the manager it registers with), so a drain
// of the old stream carried out after it would leave the node draining
// for a manager that never ordered it. The test holds the drain on the
// node's receiver until the old stream is torn down (its send failed) and
// then until the node's next stream opens, for at most holdFor: a node
// that registers again without waiting for its receiver opens it
// meanwhile and the drain is carried out after the registration.
func TestManagerLinkStaleCommandAfterReregistration(t *testing.T) {
	const holdFor = 2 * time.Second
	b := &breakingManager{fakeManager: newFakeManager(), second: make(chan struct{})}
	b.interval = 50 * time.Millisecond
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, b) })
	carried := make(chan struct{})
	n := startNode(t, startOrigin(t, newFakeOrigin(t)), func(n *Node) {
		n.ManagerAddr = maddr
		n.HeartbeatInterval = 50 * time.Millisecond
		n.commandHook = func(ctx context.Context, cmd *pb.NodeCommand, carryOut func()) {
			if !cmd.GetDrain().GetDrain() {
				carryOut()
				return
			}
			<-ctx.Done() // the stream's send failed: the stream is torn down
			select {
			case <-b.second:
			case <-time.After(holdFor):
			}
			carryOut()
			close(carried)
		}
	})
	select {
	case <-carried:
	case <-time.After(waitForMin + holdFor):
		t.Fatal("the drain was never carried out")
	}
	select {
	case <-b.second:
	case <-time.After(waitForMin):
		t.Fatal("the node did not open a heartbeat stream again")
	}
	if n.draining.Load() {
		t.Fatal("the node drains after registering again: the old stream's drain was carried out after the registration cleared it")
	}
}
