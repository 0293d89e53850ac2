package vodnode

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"vodcluster/cdp"
	"vodcluster/proto/logtest"
	pb "vodcluster/proto/vodcluster/v1"
)

// gateCDP is a real origin (cdp.Server: its channels, its queue, its
// preemption) whose transfers the test holds at two gates, in the send of
// a data chunk: a fill of fillTitle (a transfer not preemptible) holds
// its chunks from fillAt on until fillGate closes, and a preemptible
// transfer (a node's read of a range far ahead of a fill) holds its
// chunks after its first until rangeGate closes. A held send waits in
// the test's wrapper, not in the origin: the origin gives the channel of
// a transfer it ends back at once, and the transfer returns once its
// send does. A prefetch's transfer (FetchRequest.prefetch) holds its
// chunks after its first until prefetchGate closes.
type gateCDP struct {
	*cdp.Server
	fillTitle string
	fillAt    int64

	fillGate, rangeGate, prefetchGate chan struct{}
	fillHeld, rangeHeld, prefetchHeld chan struct{} // closed when a send first waits at each gate
	heldOnce, openOnce                [3]sync.Once
}

// startGateCDP starts a real origin with two channels serving titles
// (id → bytes) and returns it behind a gateCDP holding the fills of
// fillTitle from fillAt on, every gate shut until the test opens it (the
// test's end opens them all, before the origin closes).
func startGateCDP(t *testing.T, titles map[string][]byte, fillTitle string, fillAt int64) (*cdp.Server, *gateCDP) {
	t.Helper()
	dir := t.TempDir()
	for id, d := range titles {
		if err := os.WriteFile(filepath.Join(dir, id+".ts"), d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := &cdp.Server{Dir: dir, Listen: "127.0.0.1:0", MaxTransfers: 2, CatalogPoll: -1,
		Logger: slog.New(slog.DiscardHandler)}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	o := &gateCDP{Server: srv, fillTitle: fillTitle, fillAt: fillAt,
		fillGate: make(chan struct{}), rangeGate: make(chan struct{}), prefetchGate: make(chan struct{}),
		fillHeld: make(chan struct{}), rangeHeld: make(chan struct{}), prefetchHeld: make(chan struct{})}
	t.Cleanup(func() { o.openFills(); o.openRanges(); o.openPrefetches() })
	return srv, o
}

// openFills, openRanges and openPrefetches open each gate (once).
func (o *gateCDP) openFills()      { o.openOnce[0].Do(func() { close(o.fillGate) }) }
func (o *gateCDP) openRanges()     { o.openOnce[1].Do(func() { close(o.rangeGate) }) }
func (o *gateCDP) openPrefetches() { o.openOnce[2].Do(func() { close(o.prefetchGate) }) }

func (o *gateCDP) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	return o.Server.Fetch(req, &gateStream{ServerStreamingServer: s, o: o, req: req})
}

// gateStream is one transfer's stream through a gateCDP.
type gateStream struct {
	grpc.ServerStreamingServer[pb.FetchChunk]
	o      *gateCDP
	req    *pb.FetchRequest
	chunks int // data chunks sent
}

func (g *gateStream) Send(c *pb.FetchChunk) error {
	if len(c.GetData()) > 0 {
		var gate, held chan struct{}
		var once *sync.Once
		switch {
		case g.req.GetPrefetch() && g.chunks > 0:
			gate, held, once = g.o.prefetchGate, g.o.prefetchHeld, &g.o.heldOnce[2]
		case g.req.GetNoWait() && g.chunks > 0:
			gate, held, once = g.o.rangeGate, g.o.rangeHeld, &g.o.heldOnce[1]
		case !g.req.GetNoWait() && g.req.GetTitleId() == g.o.fillTitle && c.GetOffset() >= g.o.fillAt:
			gate, held, once = g.o.fillGate, g.o.fillHeld, &g.o.heldOnce[0]
		}
		if gate != nil {
			once.Do(func() { close(held) })
			select {
			case <-gate:
			case <-g.Context().Done():
				return g.Context().Err()
			}
		}
		g.chunks++
	}
	return g.ServerStreamingServer.Send(c)
}

// The whole chain of a range read far ahead of a fill giving its origin
// channel to a fill, against a real origin with two channels: a viewer's
// film fills (held at 200 kB) on one; the player's read of its last
// 250 kB is read from the origin on the other, and holds it (held after
// its first chunk). Another viewer's film then needs a fill: the origin
// ends the range's read (preemptible) and gives its channel to that fill,
// which completes while the range's read is still held. The range's
// response then takes the rest of its bytes from its own film's fill,
// and comes out whole. Without preemption the second film's fill would
// wait for the range's read to end.
func TestHTTPRangeAheadGivesItsOriginChannelToAFill(t *testing.T) {
	a, b := clip(t, "clip-a.ts"), clip(t, "clip-b.ts")
	srv, o := startGateCDP(t, map[string][]byte{"film-a": a, "film-b": b}, "film-a", 200_000)
	open := func() { o.openFills(); o.openRanges() }
	var log logtest.Buffer
	n := startNode(t, serveGRPC(t, func(s *grpc.Server) { pb.RegisterOriginServer(s, o) }), withHTTP,
		func(n *Node) { n.Logger = slog.New(slog.NewTextHandler(&log, nil)) })

	urlA := httpURL(n, mint(t, "preempt-a", "film-a", "node-1", "", time.Minute), "film-a.ts")
	if res, body := get(t, urlA, "Range", "bytes=0-999"); res.StatusCode != http.StatusPartialContent || !bytes.Equal(body, a[:1000]) {
		t.Fatalf("film-a's first bytes: %d, %d bytes", res.StatusCode, len(body))
	}
	waitClosed(t, o.fillHeld, "film-a's fill held")
	tail := make(chan answer, 1)
	go func() { tail <- getAsync(urlA, "bytes=-"+itoa(aheadTail)) }()
	waitClosed(t, o.rangeHeld, "the tail's origin read held after its first chunk")
	if st := srv.Stats(); st.Active != 2 {
		t.Fatalf("origin before film-b: %+v, want both channels busy", st)
	}

	// film-b's fill queues at the origin and takes the tail's channel.
	urlB := httpURL(n, mint(t, "preempt-b", "film-b", "node-1", "", time.Minute), "film-b.ts")
	first := make(chan answer, 1)
	go func() { first <- getAsync(urlB, "bytes=0-999") }()
	var res *http.Response
	var body []byte
	select {
	case ans := <-first:
		if ans.err != nil {
			t.Fatal(ans.err)
		}
		res, body = ans.res, ans.body
	case <-time.After(10 * time.Second):
		t.Fatalf("film-b not answered within 10 s: its fill waits for a channel (origin %+v)", srv.Stats())
	}
	if res.StatusCode != http.StatusPartialContent || !bytes.Equal(body, b[:1000]) {
		t.Fatalf("film-b's first bytes: %d, %d bytes", res.StatusCode, len(body))
	}
	if st := srv.Stats(); st.Preempted != 1 {
		t.Fatalf("origin after film-b's fill: %+v, want one transfer preempted", st)
	}
	select {
	case ans := <-tail:
		t.Fatalf("the tail answered (%+v) with its origin read and its fill held", ans)
	default:
	}

	open() // the tail's read ends (ABORTED), film-a's fill goes on and reaches the tail
	ans := <-tail
	want := a[len(a)-aheadTail:]
	if !ans.partial(want) {
		t.Fatalf("film-a's tail: err %v, %d of %d bytes, equal %v", ans.err, len(ans.body), len(want), bytes.Equal(ans.body, want))
	}
	if got := n.Stats().OriginRangeBytes; got <= 0 || got >= aheadTail {
		t.Errorf("OriginRangeBytes %d, want some of the tail's %d bytes, not all", got, aheadTail)
	}
	if !strings.Contains(log.String(), "code = Aborted") {
		t.Errorf("the node did not log the origin's read ending ABORTED:\n%s", log.String())
	}
}

// waitClosed waits up to 10 s for ch to close.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
	}
}
