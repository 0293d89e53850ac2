package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// slowGiveUpOrigin passes calls to a real origin's client, but the
// transfers of title slow, once their client gives them up, take until
// gate closes to say so (a connection slow to end, a fill's goroutine
// busy elsewhere): the fill stopped stays on the node meanwhile.
type slowGiveUpOrigin struct {
	pb.OriginClient
	slow string
	gate chan struct{}
}

func (o *slowGiveUpOrigin) Fetch(ctx context.Context, in *pb.FetchRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[pb.FetchChunk], error) {
	st, err := o.OriginClient.Fetch(ctx, in, opts...)
	if err != nil || in.GetTitleId() != o.slow {
		return st, err
	}
	return &slowGiveUpStream{ServerStreamingClient: st, ctx: ctx, gate: o.gate}, nil
}

type slowGiveUpStream struct {
	grpc.ServerStreamingClient[pb.FetchChunk]
	ctx  context.Context
	gate chan struct{}
}

func (s *slowGiveUpStream) Recv() (*pb.FetchChunk, error) {
	c, err := s.ServerStreamingClient.Recv()
	if err != nil && s.ctx.Err() != nil {
		<-s.gate
	}
	return c, err
}

// A viewer who asks for a prefetch's title after a fill on demand stopped
// that prefetch, but before the prefetch's fill has ended, is not handed
// the stopped fill (which would fail under it with "preempted", after its
// setup succeeded): it waits for that fill's end and gets the title as it
// is then (here a fill from the partial, which the disk has no room for:
// ErrNoSpace, a refusal at setup).
func TestViewerDoesNotJoinPreemptedPrefetch(t *testing.T) {
	data := sample(t)
	o := newCDPOrigin(t, map[string][]byte{"pre": data, "dem": data})
	o.start(2_000_000) // 250 kB/s: the prefetch is still filling when the viewer comes
	origin := &slowGiveUpOrigin{OriginClient: o.client(), slow: "pre", gate: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(origin.gate)
		}
	}()
	s, pre := prefetchUnderway(t, origin, data)
	ctx := context.Background()

	dem, err := s.Acquire(ctx, "dem")
	if err != nil {
		t.Fatalf("fill on demand with the disk taken by a prefetch: %v", err)
	}
	defer s.Release(dem)
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return pre.preempted }, "the prefetch stopped")

	type got struct {
		t   *Title
		err error
	}
	res := make(chan got, 1)
	go func() {
		tt, err := s.Acquire(ctx, "pre")
		res <- got{tt, err}
	}()
	// The stopped fill ends 300 ms on (its transfer slow to give up).
	var r got
	select {
	case r = <-res:
		close(origin.gate)
	case <-time.After(300 * time.Millisecond):
		close(origin.gate)
		select {
		case r = <-res:
		case <-time.After(10 * time.Second):
			t.Fatal("viewer's Acquire of the preempted title did not return")
		}
	}
	released = true
	if r.err != nil {
		if !errors.Is(r.err, ErrNoSpace) {
			t.Fatalf("viewer of the preempted title: %v, want a title or ErrNoSpace", r.err)
		}
	} else {
		defer s.Release(r.t)
		if r.t == pre {
			t.Fatal("viewer handed the preempted prefetch's fill")
		}
		if err := waitEnded(t, r.t); err != nil {
			t.Fatalf("viewer's title failed: %v", err)
		}
	}
}

// A fill on demand stops no prefetch when stopping every prefetch it may
// would not make its room: with the title it counted on evicting kept
// since (a viewer on its way for it: Expect), the prefetch left is
// smaller than the room missing, and the fill fails ErrNoSpace with the
// prefetch still filling, not preempted for nothing.
func TestNoPreemptionThatCannotMakeTheRoom(t *testing.T) {
	data := sample(t)
	half := data[:len(data)/2/188*188]
	hangs := []string{"dem"} // its first transfer: no byte before the Expect below
	for range 50 {
		hangs = append(hangs, "pre") // the prefetch never gets a byte
	}
	_, client := startHangingCDP(t, map[string][]byte{"old": data, "pre": half, "dem": data}, 4, hangs...)
	s, err := Open(Config{Dir: t.TempDir(), Origin: client, StallAfter: time.Second,
		DiskBytes: int64(len(data)+len(half)) + 188})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := fillEnded(t, s, "old"); err != nil {
		t.Fatal(err)
	}
	if err := s.Prefetch(ctx, "pre"); err != nil {
		t.Fatal(err)
	}
	dem, err := s.Acquire(ctx, "dem") // counts on evicting old and stopping pre
	if err != nil {
		t.Fatalf("fill on demand: %v", err)
	}
	defer s.Release(dem)
	if !s.Expect("s1", "old", time.Now().Add(time.Minute)) {
		t.Fatal("expect refused")
	}
	if err := waitEnded(t, dem); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("fill on demand with old kept and pre too small: %v, want ErrNoSpace", err)
	}
	if st, ok := statusOf(s, "pre"); !ok || !st.Filling {
		t.Fatalf("prefetch after the fill that could not have its room: %+v (found %v), want still filling", st, ok)
	}
	if got := s.FillsFailed()["preempted"]; got != 0 {
		t.Fatalf("prefetches preempted: %d, want 0 (%v)", got, s.FillsFailed())
	}
}
