package vodnode

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

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
	a, c := clip(t, "clip-a.ts"), clip(t, "clip-c.ts")
	srv, o := startGateCDP(t, map[string][]byte{"film-a": a, "film-c": c}, "film-a", 200_000)
	o.openRanges() // the tail's read is not held
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

	o.openPrefetches()
	waitComplete(t, n, "film-c")
	if !strings.Contains(log.String(), "prefetch gave its origin channel to a viewer's fill or read") {
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
	c := clip(t, "clip-c.ts")
	srv, o := startGateCDP(t, map[string][]byte{"film-c": c}, "", 0)
	o.openFills()
	o.openRanges()
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
