package vodnode

import (
	"bytes"
	"log/slog"
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

// A prefetch gives its origin channel to a viewer's read far ahead of a
// fill, against a real origin with two channels: a prefetch of film-c
// holds one (held after its first chunk), a viewer's film-a fills on the
// other (held at 200 kB), and the player then asks for film-a's last
// 250 kB. The origin ends the prefetch's transfer (ABORTED) and gives its
// channel to the node's read of the tail, which is answered whole while
// film-a's fill is still held. The prefetch queues again, and completes
// once its transfers are let go. Before, the read was refused (every
// channel busy) and the tail waited for film-a's fill: a prefetch, which
// no viewer waits for, held back a viewer.
func TestHTTPRangeAheadTakesAPrefetchsOriginChannel(t *testing.T) {
	dir := t.TempDir()
	a, c := clip(t, "clip-a.ts"), clip(t, "clip-c.ts")
	for id, d := range map[string][]byte{"film-a": a, "film-c": c} {
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
	ranges := make(chan struct{})
	close(ranges) // the tail's read is not held
	o := &gateCDP{Server: srv, fillTitle: "film-a", fillAt: 200_000,
		fillGate: make(chan struct{}), rangeGate: ranges, prefetchGate: make(chan struct{}),
		fillHeld: make(chan struct{}), rangeHeld: make(chan struct{}), prefetchHeld: make(chan struct{})}
	var fillOnce, prefetchOnce sync.Once
	openFill := func() { fillOnce.Do(func() { close(o.fillGate) }) }
	openPrefetch := func() { prefetchOnce.Do(func() { close(o.prefetchGate) }) }
	t.Cleanup(openFill) // before the origin's close
	t.Cleanup(openPrefetch)
	var log logtest.Buffer
	n := startNode(t, serveGRPC(t, func(s *grpc.Server) { pb.RegisterOriginServer(s, o) }), withHTTP,
		func(n *Node) { n.Logger = slog.New(slog.NewTextHandler(&log, nil)) })

	if err := n.store.Prefetch(n.ctx, "film-c"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, o.prefetchHeld, "film-c's prefetch held after its first chunk")
	urlA := httpURL(n, mint(t, "yield-a", "film-a", "node-1", "", time.Minute), "film-a.ts")
	if res, body := get(t, urlA, "Range", "bytes=0-999"); res.StatusCode != 206 || !bytes.Equal(body, a[:1000]) {
		t.Fatalf("film-a's first bytes: %d, %d bytes", res.StatusCode, len(body))
	}
	waitClosed(t, o.fillHeld, "film-a's fill held")
	if st := srv.Stats(); st.Active != 2 {
		t.Fatalf("origin before the tail: %+v, want both channels busy", st)
	}

	tail := make(chan answer, 1)
	go func() { tail <- getAsync(urlA, "bytes=-"+itoa(aheadTail)) }()
	select {
	case ans := <-tail:
		if want := a[len(a)-aheadTail:]; !ans.partial(want) {
			t.Fatalf("film-a's tail: %v, want its %d bytes", ans, aheadTail)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("film-a's tail not answered within 20 s with its fill held: the prefetch kept its channel (origin %+v)", srv.Stats())
	}
	if st := srv.Stats(); st.Yielded != 1 || st.Preempted != 0 {
		t.Errorf("origin after the tail: %+v, want one prefetch yielded, no read preempted", st)
	}
	if got := n.Stats().OriginRangeBytes; got != aheadTail {
		t.Errorf("OriginRangeBytes %d, want the tail's %d", got, aheadTail)
	}
	if !stillFilling(n, "film-a") {
		t.Error("film-a's fill is not held any more")
	}

	openPrefetch()
	waitComplete(t, n, "film-c")
	if !strings.Contains(log.String(), "prefetch gave its origin channel to a viewer's read") {
		t.Errorf("the node did not log the prefetch's yield:\n%s", log.String())
	}
}

// A viewer that comes for a title its prefetch is filling makes the fill
// one on demand at the origin too: the prefetch's transfer ends and the
// fill asks again as a fill (not FetchRequest.prefetch), which a
// viewer's read far ahead does not take the channel of. Here the origin
// holds every prefetch's transfer after its first chunk: the title
// completes only from a transfer asked again so. Before, the transfer
// stayed a prefetch's to its end, and gave its channel to any read.
func TestPrefetchWatchedIsAskedAgainAsAFill(t *testing.T) {
	dir := t.TempDir()
	c := clip(t, "clip-c.ts")
	if err := os.WriteFile(filepath.Join(dir, "film-c.ts"), c, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := &cdp.Server{Dir: dir, Listen: "127.0.0.1:0", MaxTransfers: 2, CatalogPoll: -1,
		Logger: slog.New(slog.DiscardHandler)}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	open := make(chan struct{})
	close(open)
	o := &gateCDP{Server: srv, fillGate: open, rangeGate: open, prefetchGate: make(chan struct{}),
		fillHeld: make(chan struct{}), rangeHeld: make(chan struct{}), prefetchHeld: make(chan struct{})}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(o.prefetchGate) }) }) // before the origin's close
	n := startNode(t, serveGRPC(t, func(s *grpc.Server) { pb.RegisterOriginServer(s, o) }), withHTTP)

	if err := n.store.Prefetch(n.ctx, "film-c"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, o.prefetchHeld, "film-c's prefetch held after its first chunk")
	url := httpURL(n, mint(t, "watch-c", "film-c", "node-1", "", time.Minute), "film-c.ts")
	if res, body := get(t, url, "Range", "bytes=0-99"); res.StatusCode != 206 || !bytes.Equal(body, c[:100]) {
		t.Fatalf("film-c's first bytes: %d, %d bytes", res.StatusCode, len(body))
	}
	waitComplete(t, n, "film-c")
	if st := srv.Stats(); st.TitleTransfers["film-c"] != 2 || st.Yielded != 0 {
		t.Errorf("origin: %+v, want film-c's prefetch and its fill asked again", st)
	}
}
