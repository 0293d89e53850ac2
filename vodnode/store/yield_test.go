package store

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

// yieldOrigin answers a prefetch's transfers as an origin whose channels
// viewers' reads take: the first fails at once (Unavailable: an outage
// starts the fill's retry window), the second sends half of the title
// over more than the window and then ends ABORTED (its channel given to
// a viewer's read), the third fails at once again, and the others send
// the rest. It records whether each was asked as a prefetch.
type yieldOrigin struct {
	*origin
	window time.Duration

	mu       sync.Mutex
	calls    int
	prefetch []bool
}

func (o *yieldOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	o.mu.Lock()
	o.calls++
	call := o.calls
	o.prefetch = append(o.prefetch, req.GetPrefetch())
	o.mu.Unlock()
	switch call {
	case 1, 3:
		return status.Error(codes.Unavailable, "origin restarting (test)")
	case 2:
		o.origin.mu.Lock()
		d := o.titles[req.GetTitleId()]
		o.origin.mu.Unlock()
		half := int64(len(d)) / 2 / 188 * 188
		select { // a transfer that lasts longer than the window
		case <-time.After(2 * o.window):
		case <-s.Context().Done():
			return s.Context().Err()
		}
		if err := s.Send(&pb.FetchChunk{Offset: req.GetOffset(), Data: d[req.GetOffset():half]}); err != nil {
			return err
		}
		return status.Error(codes.Aborted, "the origin gave this prefetch's channel to a viewer's read (test)")
	}
	return o.origin.Fetch(req, s)
}

// prefetchOn opens a store on origin o with room for two titles of size
// bytes, retries of 10 to 20 ms for window, and prefetches "pre" there;
// the store closes at the test's end.
func prefetchOn(t *testing.T, o pb.OriginServer, size int64, window time.Duration) *Store {
	t.Helper()
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), DiskBytes: 2 * size,
		Retry: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond, RetryFor: window})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Prefetch(context.Background(), "pre"); err != nil {
		t.Fatal(err)
	}
	return s
}

// A prefetch whose transfer gives its channel to a viewer's read (ABORTED,
// pb.FetchRequest.prefetch) after receiving bytes has not failed: the
// fill's retry window starts again, and a short outage after it is
// ridden out. Before, the window opened by an outage before the yield
// went on through it, and the next failure failed the fill at once ("no
// byte from the origin for 300ms").
func TestPrefetchYieldIsNotAnOutage(t *testing.T) {
	data := sample(t)
	const window = 300 * time.Millisecond
	o := &yieldOrigin{origin: &origin{titles: map[string][]byte{"pre": data}}, window: window}
	s := prefetchOn(t, o, int64(len(data)), window)
	s.fills.Wait() // the fill's end, complete or failed
	if f := s.TakeFailures(); len(f) != 0 {
		t.Fatalf("the prefetch failed: %+v", f)
	}
	if st := s.Titles(); len(st) != 1 || st[0].Filling || st[0].Stored != int64(len(data)) {
		t.Fatalf("titles %+v, want pre stored whole", st)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls != 4 || !o.prefetch[0] || !o.prefetch[3] {
		t.Errorf("%d transfers, asked as prefetches %v: want 4, all prefetches", o.calls, o.prefetch)
	}
}

// watchOrigin is an origin with an outage and a long queue: its first
// transfer fails at once (Unavailable), its second waits in the queue
// (no started message) for more than the retry window, says so on
// queuedLong and waits on for its caller to leave, its third fails at
// once again, and the others send the title.
type watchOrigin struct {
	*origin
	window     time.Duration
	queuedLong chan struct{}

	mu    sync.Mutex
	calls int
}

func (o *watchOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	o.mu.Lock()
	o.calls++
	call := o.calls
	o.mu.Unlock()
	switch call {
	case 1, 3:
		return status.Error(codes.Unavailable, "origin restarting (test)")
	case 2:
		select { // queued for a channel longer than the window
		case <-time.After(2 * o.window):
		case <-s.Context().Done():
			return s.Context().Err()
		}
		close(o.queuedLong)
		<-s.Context().Done()
		return s.Context().Err()
	}
	return o.origin.Fetch(req, s)
}

// A viewer that comes for a prefetch whose transfer waits in the origin's
// queue ends that transfer (the fill asks again as one on demand) and
// starts a new retry window: an outage right after does not fail the fill
// at once. Before, the window opened by an outage before the queue ran
// on through the queue's wait ("no byte from the origin for 300ms").
func TestPrefetchWatchedWhileQueuedIsNotAnOutage(t *testing.T) {
	data := sample(t)
	const window = 300 * time.Millisecond
	o := &watchOrigin{origin: &origin{titles: map[string][]byte{"pre": data}}, window: window, queuedLong: make(chan struct{})}
	s := prefetchOn(t, o, int64(len(data)), window)
	select {
	case <-o.queuedLong:
	case <-time.After(10 * time.Second):
		t.Fatal("the prefetch's second transfer did not come")
	}
	tt, err := s.Acquire(context.Background(), "pre") // a viewer comes
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(tt)
	s.fills.Wait()
	if v := tt.View(); !v.Complete {
		t.Fatalf("the fill ended without the title: %v", v.Err)
	}
}
