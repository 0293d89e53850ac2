package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// gateOrigin records whether each transfer was asked as a prefetch. Its
// first transfer waits for its caller to leave; its second sends its
// started message and a first chunk, closes inFlight, and holds its
// channel until gate closes; the others send the title.
type gateOrigin struct {
	*origin
	first, inFlight, gate chan struct{}

	mu       sync.Mutex
	prefetch []bool
}

func newGateOrigin(titles map[string][]byte) *gateOrigin {
	return &gateOrigin{origin: &origin{titles: titles}, first: make(chan struct{}), inFlight: make(chan struct{}), gate: make(chan struct{})}
}

func (o *gateOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	o.mu.Lock()
	o.prefetch = append(o.prefetch, req.GetPrefetch())
	call := len(o.prefetch)
	o.mu.Unlock()
	switch call {
	case 1:
		close(o.first)
		<-s.Context().Done()
		return s.Context().Err()
	case 2:
		o.origin.mu.Lock()
		d := o.titles[req.GetTitleId()]
		o.origin.mu.Unlock()
		off := req.GetOffset()
		if err := s.Send(&pb.FetchChunk{Offset: off, Started: true}); err != nil {
			return err
		}
		if err := s.Send(&pb.FetchChunk{Offset: off, Data: d[off : off+188*10]}); err != nil {
			return err
		}
		close(o.inFlight)
		select {
		case <-o.gate:
		case <-s.Context().Done():
			return s.Context().Err()
		}
		req = &pb.FetchRequest{TitleId: req.GetTitleId(), Offset: off + 188*10, IfVersion: req.GetIfVersion()} // the rest
	}
	return o.origin.Fetch(req, s)
}

// asked returns whether each transfer so far was asked as a prefetch.
func (o *gateOrigin) asked() []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]bool(nil), o.prefetch...)
}

// gatedPrefetch prefetches "pre" (the sample title, returned) on a store
// whose origin is a gateOrigin, and returns them once the prefetch's
// first transfer is under way.
func gatedPrefetch(t *testing.T) (*gateOrigin, *Store, []byte) {
	t.Helper()
	data := sample(t)
	o := newGateOrigin(map[string][]byte{"pre": data})
	s := prefetchOn(t, o, int64(len(data)), 5*time.Second)
	wait(t, o.first, "first transfer")
	if st := s.Titles(); len(st) != 1 || !st[0].OriginWait {
		t.Fatalf("titles %+v: want pre's transfer not started at the origin (no message from it yet)", st)
	}
	return o, s, data
}

// secondAskedAsFill waits for o's second transfer and fails t unless the
// first was asked as a prefetch and the second as a fill, and s reports
// the title filling and not preemptible.
func secondAskedAsFill(t *testing.T, o *gateOrigin, s *Store) {
	t.Helper()
	wait(t, o.inFlight, "second transfer")
	if asked := o.asked(); len(asked) != 2 || !asked[0] || asked[1] {
		t.Fatalf("transfers asked as prefetch: %v, want [true false]", asked)
	}
	waitFor(t, func() bool { return s.Titles()[0].Stored > 0 }, "the second transfer's first chunk written")
	if st := s.Titles(); len(st) != 1 || !st[0].Filling || st[0].Preemptible || st[0].OriginWait {
		t.Errorf("titles %+v: want pre filling, started at the origin, not preemptible while its transfer holds the channel as a fill", st)
	}
}

// A prefetch a viewer came for is asked again as a fill; once the viewer
// leaves, that transfer still holds its origin channel as a fill (the
// origin never ends it for a viewer's fill), so the node does not report
// the title preemptible until it ends: the manager counts a preemptible
// fill as one that gives its channel away. Before, it was reported
// preemptible at once, and the manager sent a viewer of a cold title a
// fill that queued at the origin behind it.
func TestPrefetchWatchedThenLeftIsNotPreemptible(t *testing.T) {
	o, s, data := gatedPrefetch(t)
	if st := s.Titles(); len(st) != 1 || !st[0].Preemptible {
		t.Fatalf("titles %+v: want pre a preemptible prefetch", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tt, err := s.Acquire(ctx, "pre") // a viewer comes
	if err != nil {
		t.Fatal(err)
	}
	wait(t, o.inFlight, "second transfer")
	s.Release(tt) // the viewer leaves
	secondAskedAsFill(t, o, s)
	close(o.gate)
	s.fills.Wait()
	if st := s.Titles(); len(st) != 1 || st[0].Filling || st[0].Stored != int64(len(data)) {
		t.Fatalf("titles %+v, want pre stored whole", st)
	}
}

// A prefetch the manager comes to protect (a pin) while its transfer is
// asked of the origin as a prefetch is asked again as a fill: the manager
// counts a pinned fill in its budget of origin channels, and the origin
// must not end it for a viewer's fill. Before, the transfer stayed a
// prefetch until it ended.
func TestPrefetchPinnedIsAskedAgainAsAFill(t *testing.T) {
	o, s, _ := gatedPrefetch(t)
	s.SetProtected([]string{"pre"})
	secondAskedAsFill(t, o, s)
	close(o.gate)
	s.fills.Wait()
	if f := s.TakeFailures(); len(f) != 0 {
		t.Fatalf("the prefetch failed: %+v", f)
	}
}
