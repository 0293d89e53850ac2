package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// gatedOrigin holds every transfer until gate is closed (all its channels
// busy), counting the transfers whose client gave up meanwhile.
type gatedOrigin struct {
	*origin
	gate      chan struct{}
	cancelled atomic.Int32
}

func (o *gatedOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	select {
	case <-o.gate:
		return o.origin.Fetch(req, s)
	case <-s.Context().Done():
		o.cancelled.Add(1)
		return s.Context().Err()
	}
}

// TestAbandonedFillFreesItsChannel: a fill on demand whose reader left
// before the origin's first byte is abandoned AbandonAfter later (its
// transfer cancelled, its .part gone, nothing stored); one whose reader
// came back within that time, and a prefetch, go on and complete.
func TestAbandonedFillFreesItsChannel(t *testing.T) {
	data := sample(t)
	o := &gatedOrigin{origin: &origin{titles: map[string][]byte{"left": data, "back": data, "pre": data}}, gate: make(chan struct{})}
	// The reader that comes back must do so within AbandonAfter of its
	// release: 300 ms leaves a slow machine room between the two calls.
	const after = 300 * time.Millisecond
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), AbandonAfter: after})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	left, err := s.Acquire(ctx, "left")
	if err != nil {
		t.Fatal(err)
	}
	s.Release(left)
	v := waitView(t, left, 10*time.Second, "the abandoned fill's end", func(v *View) bool { return v.Err != nil })
	if !errors.Is(v.Err, errAbandoned) {
		t.Fatalf("abandoned fill: %v", v.Err)
	}
	for deadline := time.Now().Add(5 * time.Second); o.cancelled.Load() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned fill's transfer not cancelled at the origin (%d)", o.cancelled.Load())
		}
	}

	back, err := s.Acquire(ctx, "back")
	if err != nil {
		t.Fatal(err)
	}
	s.Release(back)
	back2, err := s.Acquire(ctx, "back") // within AbandonAfter: the same fill
	if err != nil || back2 != back {
		t.Fatalf("reader back: %v, same fill %v", err, back2 == back)
	}
	defer s.Release(back2)
	if err := s.Prefetch(ctx, "pre"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * after) // nothing may be abandoned meanwhile (asserted below)
	close(o.gate)
	waitComplete(t, back)
	s.fills.Wait()
	if st := s.Titles(); len(st) != 2 || o.cancelled.Load() != 1 {
		t.Fatalf("titles %+v (want back and pre stored), transfers cancelled %d (want the abandoned one only)", st, o.cancelled.Load())
	}
}

// The abandon timer counts from the last reader's leaving: a reader that
// came back and left again restarts it; a prefetch ordered after the
// readers left keeps the fill.
func TestAbandonCountsFromTheLastRelease(t *testing.T) {
	data := sample(t)
	o := &gatedOrigin{origin: &origin{titles: map[string][]byte{"again": data, "kept": data}}, gate: make(chan struct{})}
	// The reader is away a third of AbandonAfter: two thirds are left for
	// a slow machine to bring it back in time, and an abandon counted from
	// the first release would come a third early.
	const after = 600 * time.Millisecond
	s, err := Open(Config{Dir: t.TempDir(), Origin: startOrigin(t, o), AbandonAfter: after})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	tt, err := s.Acquire(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	s.Release(tt)
	time.Sleep(after / 3) // the reader is away
	if again, err := s.Acquire(ctx, "again"); err != nil || again != tt {
		t.Fatalf("reader back within AbandonAfter: %v, same fill %v", err, again == tt)
	}
	last := time.Now() // before the release: its timer cannot end sooner than after from here
	s.Release(tt)
	waitView(t, tt, 10*time.Second, "the abandoned fill's end", func(v *View) bool { return v.Err != nil })
	if d := time.Since(last); d < after {
		t.Fatalf("abandoned %v after its last reader left, want at least %v", d, after)
	}

	kept, err := s.Acquire(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	s.Release(kept)
	if err := s.Prefetch(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * after) // past the abandon time: the prefetch keeps it (asserted below)
	close(o.gate)
	waitComplete(t, kept)
}
