package acm

import (
	"context"
	"io"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// heldStream is a node's heartbeat stream whose Send, once it has taken
// a command, waits until the test releases it, then fails (a node that
// stopped reading; its Send ends after a registration of the node's that
// the test lets the new stream's sender act upon first).
type heldStream struct {
	grpc.ServerStream
	release chan struct{}
	sending chan *pb.NodeCommand // the command Send took, once
}

func (h *heldStream) Recv() (*pb.LoadReport, error) { return nil, io.EOF }

func (h *heldStream) Send(c *pb.NodeCommand) error {
	select {
	case h.sending <- c:
	default:
	}
	<-h.release
	return io.EOF
}

// holdCommands opens a heartbeat stream for ns whose sender takes the
// queue and blocks on its first command until the stream is released;
// done closes when the sender has ended.
func (e *env) holdCommands(ns *nodeState) (st *heldStream, done chan struct{}) {
	e.t.Helper()
	e.m.mu.Lock()
	sctx, cancel := context.WithCancel(context.Background())
	ns.streamGen++
	gen := ns.streamGen
	ns.streamCancel = cancel
	e.m.mu.Unlock()
	st = &heldStream{release: make(chan struct{}), sending: make(chan *pb.NodeCommand, 1)}
	done = make(chan struct{})
	go func() {
		defer close(done)
		e.m.sendCommands(sctx, st, ns, gen)
	}()
	ns.signal()
	select {
	case <-st.sending:
	case <-time.After(5 * time.Second):
		e.t.Fatal("the sender took no command")
	}
	return st, done
}

// takeDue takes the commands ns's stream would send next, in order: the
// protect command of its pins when one is due, the drain command of its
// drain state when one is due, then the queued ones (mu held).
func takeDue(ns *nodeState) []*pb.NodeCommand {
	var out []*pb.NodeCommand
	for _, c := range []*pb.NodeCommand{ns.pins, ns.drain} {
		if c != nil {
			out = append(out, c)
		}
	}
	out = append(out, ns.queue...)
	ns.pins, ns.drain, ns.queue = nil, nil, nil
	return out
}

// senderEnded waits, 5 s at most, for the sender holdCommands started to
// end (done closed).
func (e *env) senderEnded(done chan struct{}) {
	e.t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		e.t.Fatal("the old stream's sender did not end")
	}
}

// releaseHeld releases the stream holdCommands opened (its Send fails)
// and waits for its sender to end.
func (e *env) releaseHeld(st *heldStream, done chan struct{}) {
	e.t.Helper()
	close(st.release)
	e.senderEnded(done)
}

// due takes, under the manager's lock, what ns's stream would send next
// (takeDue).
func (e *env) due(ns *nodeState) []*pb.NodeCommand {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return takeDue(ns)
}

// The commands an old stream's sender had taken from the queue, put back
// at its front once their Send failed after the node registered again,
// carry a protect command (pins) of before the registration's: it is
// dropped, and the pins as they are go first again, before those
// commands' prefetches. Put back after the new stream's sender sent the
// registration's protect command, the old one came last, and the node
// kept an old pin set (t2 unprotected) until the pins next changed.
func TestProtectOfACommandBatchPutBackAfterTheRegistration(t *testing.T) {
	for _, newFirst := range []bool{false, true} {
		name := "put back before the new stream sends"
		if newFirst {
			name = "put back after the new stream sent"
		}
		t.Run(name, func(t *testing.T) {
			e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
			ctx := context.Background()
			reg := func() {
				t.Helper()
				if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001",
					Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
					t.Fatal(err)
				}
			}
			pin := func(title string) {
				t.Helper()
				if _, err := e.admin.Pin(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n"}); err != nil {
					t.Fatal(err)
				}
			}
			reg() // no heartbeat stream yet: its commands wait in the queue
			pin("t1")
			if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil {
				t.Fatal(err)
			}

			ns := e.m.nodes["n"]
			st, done := e.holdCommands(ns)
			pin("t2")
			reg()
			var got []*pb.NodeCommand // what the node is sent from the new stream
			if newFirst {
				got = e.due(ns)
			}
			e.releaseHeld(st, done)
			e.m.mu.Lock()
			got = append(got, takeDue(ns)...)
			want := e.m.protectedOn("n")
			e.m.mu.Unlock()
			if !slices.Equal(want, []string{"t1", "t2"}) {
				t.Fatalf("pins %v, want t1 and t2", want)
			}
			if len(got) == 0 || !slices.Equal(got[0].GetProtect().GetTitleIds(), want) {
				t.Fatalf("commands for the new stream %v: the protect command of pins %v not first", got, want)
			}
			var last []string
			for _, c := range got {
				if p := c.GetProtect(); p != nil {
					last = p.GetTitleIds()
				}
			}
			if !slices.Equal(last, want) {
				t.Fatalf("commands for the new stream %v: the node is left protecting %v, want %v", got, last, want)
			}
		})
	}
}

// A prefetch the old stream's sender had taken, whose order the node's
// registration failed (past its order timeout: not started), is not put
// back for the new stream when its Send fails: sent, it started a fill
// the manager had counted failed.
func TestFailedPrefetchOfACommandBatchNotPutBack(t *testing.T) {
	e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
	ctx := context.Background()
	reg := func() {
		t.Helper()
		if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001",
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	reg()
	if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil {
		t.Fatal(err)
	}
	ns := e.m.nodes["n"]
	st, done := e.holdCommands(ns)
	e.m.mu.Lock()
	ns.pending["t3"].at = time.Now().Add(-2 * time.Minute) // ordered two timeouts ago
	e.m.mu.Unlock()
	reg()
	if s := e.storageStats(); s.FillsFailed != 1 {
		t.Fatalf("%d fills failed, want 1 (not started within the order timeout)", s.FillsFailed)
	}
	e.releaseHeld(st, done)
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	if slices.ContainsFunc(ns.queue, func(c *pb.NodeCommand) bool { return c.GetPrefetch() != nil }) {
		t.Fatalf("queue %v: the prefetch of t3, failed at the registration, put back for the node", ns.queue)
	}
}

// A prefetch the old stream's sender had taken and could not send, its
// order still pending at the node's registration, reaches the node once:
// the registration sends it again (lost with the old stream:
// lostPrefetchesLocked), and the copy the old sender puts back is
// dropped. Both went to the new stream, the order reaching the node
// twice, whether the put-back came before or after the new stream's
// sender sent the registration's.
func TestPrefetchOfACommandBatchPutBackReachesTheNodeOnce(t *testing.T) {
	for _, newFirst := range []bool{false, true} {
		name := "put back before the new stream sends"
		if newFirst {
			name = "put back after the new stream sent"
		}
		t.Run(name, func(t *testing.T) {
			e := newManager(t, "", func(m *Manager) { m.OrderTimeout = time.Minute })
			ctx := context.Background()
			reg := func() {
				t.Helper()
				if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n", RtspAddr: "127.0.0.1:7001",
					Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
					t.Fatal(err)
				}
			}
			reg() // no heartbeat stream yet: its commands wait in the queue
			if _, err := e.admin.Prefetch(ctx, &pb.PlacementRequest{TitleId: "t3", NodeId: "n"}); err != nil {
				t.Fatal(err)
			}
			ns := e.m.nodes["n"]
			st, done := e.holdCommands(ns) // takes the prefetch, never sends it
			reg()
			var got []*pb.NodeCommand // what the node is sent from the new stream
			if newFirst {
				got = e.due(ns)
			}
			e.releaseHeld(st, done)
			e.m.mu.Lock()
			got = append(got, takeDue(ns)...)
			pending := ns.pending["t3"] != nil
			e.m.mu.Unlock()
			if !pending {
				t.Fatal("the prefetch of t3 no longer ordered after the registration")
			}
			n := 0
			for _, c := range got {
				if c.GetPrefetch().GetTitleId() == "t3" {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("commands for the new stream %v: the prefetch of t3 %d times, want once", got, n)
			}
		})
	}
}
