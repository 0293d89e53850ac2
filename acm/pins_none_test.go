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

// lossyStream is a node's heartbeat stream whose Send takes each command
// and loses it (a stream broken on the node's side whose transport still
// took what was sent), handing it to sent.
type lossyStream struct {
	grpc.ServerStream
	sent chan *pb.NodeCommand
}

func (l *lossyStream) Recv() (*pb.LoadReport, error) { return nil, io.EOF }

func (l *lossyStream) Send(c *pb.NodeCommand) error {
	l.sent <- c
	return nil
}

// loseCommands opens a heartbeat stream for ns whose commands are lost
// (lossyStream); stop ends its sender and waits for it.
func (e *env) loseCommands(ns *nodeState) (st *lossyStream, stop func()) {
	e.t.Helper()
	e.m.mu.Lock()
	sctx, cancel := context.WithCancel(context.Background())
	ns.streamGen++
	gen := ns.streamGen
	ns.streamCancel = cancel
	e.m.mu.Unlock()
	st = &lossyStream{sent: make(chan *pb.NodeCommand, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.m.sendCommands(sctx, st, ns, gen)
	}()
	ns.signal()
	return st, func() {
		cancel()
		<-done
	}
}

// A node is told its pins at every registration, none included: it keeps
// the last ProtectCommand it received until the next (only a restarted
// node knows none), and the manager is the authority on them. A
// registration told it the pins only when there were any, or when this
// manager had told it of some, so a node whose last
// protect command, the unpin of its last title, was lost (taken by the
// transport of a stream that broke), or never sent because the manager
// that had it due stopped (restarted, or a standby took over: their
// nodeState is new), or a node forgotten (vodctl node forget) that came
// back, kept that title protected, its own eviction never removing it,
// until the pins next changed.
func TestNoPinsReachTheNodeAtItsRegistration(t *testing.T) {
	ctx := context.Background()
	reg := func(t *testing.T, e *env) {
		t.Helper()
		if _, err := e.nc.Register(ctx, &pb.RegisterRequest{NodeId: "n1", RtspAddr: "127.0.0.1:1",
			Capacity: &pb.NodeCapacity{EgressBps: 10 * titleBps, DiskBytes: 1 << 40}}); err != nil {
			t.Fatal(err)
		}
	}
	pin := func(t *testing.T, e *env, title string, on bool) {
		t.Helper()
		f := e.admin.Pin
		if !on {
			f = e.admin.Unpin
		}
		if _, err := f(ctx, &pb.PlacementRequest{TitleId: title, NodeId: "n1"}); err != nil {
			t.Fatal(err)
		}
	}
	isProtectOf := func(want ...string) func(*pb.NodeCommand) bool {
		return func(c *pb.NodeCommand) bool {
			return c.GetProtect() != nil && slices.Equal(c.GetProtect().GetTitleIds(), want)
		}
	}
	// holding: the node registered, told t1 is pinned (its store
	// protects it), then cut off.
	holding := func(t *testing.T, e *env) {
		t.Helper()
		reg(t, e)
		pin(t, e, "t1", true)
		rec := &cmdRecorder{}
		n := e.openStream("n1", rec)
		waitFor(t, 5*time.Second, "the protect command of t1", func() bool {
			return slices.ContainsFunc(rec.list(), isProtectOf("t1"))
		})
		n.stop()
		waitFor(t, 5*time.Second, "the stream's sender to end", func() bool {
			e.m.mu.Lock()
			defer e.m.mu.Unlock()
			return e.m.nodes["n1"].streamCancel == nil
		})
	}
	// toldNone checks that the node, registering again, is told that no
	// title is pinned.
	toldNone := func(t *testing.T, e *env) {
		t.Helper()
		reg(t, e)
		rec := &cmdRecorder{}
		e.openStream("n1", rec)
		waitFor(t, 5*time.Second, "a protect command of no title", func() bool {
			return slices.ContainsFunc(rec.list(), isProtectOf())
		})
	}

	t.Run("unpin lost with a broken stream", func(t *testing.T) {
		e := newManager(t, "", nil)
		holding(t, e)
		e.m.mu.Lock()
		ns := e.m.nodes["n1"]
		e.m.mu.Unlock()
		st, stop := e.loseCommands(ns)
		pin(t, e, "t1", false)
		select {
		case c := <-st.sent:
			if !isProtectOf()(c) {
				t.Fatalf("sent %v, want the protect command of no title", c)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the unpin's protect command was not sent")
		}
		stop()
		toldNone(t, e)
	})

	t.Run("manager restarted", func(t *testing.T) {
		dir := t.TempDir()
		e := newManager(t, dir, nil)
		holding(t, e)
		pin(t, e, "t1", false) // its protect command waits for the node
		if err := e.m.Close(); err != nil {
			t.Fatal(err)
		}
		toldNone(t, newManager(t, dir, nil))
	})

	t.Run("standby took over", func(t *testing.T) {
		open, _ := sharedRedis(t)
		a := newManager(t, "", onShared(open(), nil, time.Minute))
		b := newManager(t, "", onShared(open(), nil, time.Minute))
		holding(t, a)
		pin(t, a, "t1", false)
		a.m.Close()
		waitFor(t, 20*testLeaderTTL, "the standby to take the planner lock", b.m.Leader)
		toldNone(t, b)
	})

	t.Run("node forgotten and back", func(t *testing.T) {
		e := newManager(t, "", nil)
		holding(t, e)
		waitFor(t, 5*time.Second, "the node listed dead", func() bool { return !e.nodeInfo("n1").Alive })
		r, err := e.admin.ForgetNode(ctx, &pb.ForgetNodeRequest{NodeId: "n1"})
		if err != nil || !slices.Equal(r.GetUnpinnedTitles(), []string{"t1"}) {
			t.Fatalf("forget: %v %v, want t1 unpinned", r, err)
		}
		toldNone(t, e)
	})
}

// registrationProtect takes the first command n's stream received: the
// protect command of the node's pins (want, none included), which each
// registration sends before any other (sendProtectLocked). It fails the
// test when none came within waitForMin or the first is another command.
func (n *fakeNode) registrationProtect(t *testing.T, want ...string) {
	t.Helper()
	select {
	case c := <-n.cmds:
		if p := c.GetProtect(); p == nil || !slices.Equal(p.GetTitleIds(), want) {
			t.Fatalf("first command %v, want the registration's protect command of %v", c, want)
		}
	case <-time.After(waitForMin):
		t.Fatalf("no protect command reached %s within %v (want %v)", n.id, waitForMin, want)
	}
}
