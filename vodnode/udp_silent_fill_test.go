package vodnode

import (
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/proto/monotime"
	pb "vodcluster/proto/vodcluster/v1"
)

// TestUDPViewerGoneWhileTheFillWaitsEndsAtItsLastSignOfLife: a viewer
// over UDP that never sends a receiver report (a set-top box killed just
// after its PLAY), of a title whose fill from the origin stalls (held at
// its first 30 kB), is sent what the fill had; its session, kept alive
// while its stream waits for the fill (the silence is the node's), times
// out once the fill goes on, and is reported ENDED at its PLAY, its last
// sign of life, with the bytes sent by then (none): not at the node's last
// keep while the stream waited, with what was sent until then, which
// nothing says reached it. (It was: the session record counted the
// waiting as played.)
func TestUDPViewerGoneWhileTheFillWaitsEndsAtItsLastSignOfLife(t *testing.T) {
	o := heldOrigin(t, 30_000)
	m := newFakeManager()
	maddr := serveGRPC(t, func(s *grpc.Server) { pb.RegisterNodeControlServer(s, m) })
	n := startNode(t, startOrigin(t, o), func(n *Node) { n.SessionTimeout = 2 * time.Second; n.ManagerAddr = maddr })
	rtpc, rtcpc := udpPair(t)
	var received atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			k, err := rtpc.Read(buf)
			if err != nil {
				return
			}
			received.Add(int64(k))
		}
	}()
	c := dialRTSP(t, n)
	id := c.setupUDP(nodeURL(n, mint(t, "box-gone", "sample-001", "node-1", "", time.Minute), "sample-001"), rtpc, rtcpc)
	played := time.Now()
	s := n.lookupSession(id)
	if s == nil {
		t.Fatal("no session after PLAY")
	}
	// Silent from now on. Its stream plays what the fill has and waits;
	// the janitor keeps the session alive past its timeout.
	waitFor(t, 15*time.Second, "the session kept while its stream waits for the fill", func() bool {
		return monotime.Time(s.lastSeen.Load()).Sub(played) > 2*n.SessionTimeout && received.Load() > 0
	})
	if e := m.event("box-gone", pb.SessionEvent_KIND_ENDED); e != nil {
		t.Fatalf("ended while its stream waited for the fill: %+v", e)
	}
	o.unhold()
	waitFor(t, 15*time.Second, "ENDED", func() bool { return m.event("box-gone", pb.SessionEvent_KIND_ENDED) != nil })
	e := m.event("box-gone", pb.SessionEvent_KIND_ENDED)
	if at := time.UnixMilli(e.GetAtUnixMs()); e.GetReason() != "timeout" || at.After(played) || e.GetBytesSent() != 0 {
		t.Fatalf("ENDED %+v at %v: want reason timeout at its PLAY (by %v), no bytes counted (%d were sent)", e, at, played, received.Load())
	}
}
