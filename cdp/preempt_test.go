package cdp

import (
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	vodclusterv1 "vodcluster/proto/vodcluster/v1"
)

// startSlow opens a Fetch of sample-007 paced at one chunk a second and
// returns its stream once its first chunk came: it holds a channel.
func startSlow(t *testing.T, c vodclusterv1.OriginClient, req *vodclusterv1.FetchRequest) vodclusterv1.Origin_FetchClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := c.Fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			t.Fatalf("%v: %v before its first chunk", req, err)
		}
		if len(m.GetData()) > 0 {
			return stream
		}
	}
}

// chunk is startPaced's chunk size, in bytes: ten TS packets.
const chunk = 10 * 188

// startPaced starts an origin of channels transfer channels sending one
// chunk a second, so that a transfer holds its channel for the test.
func startPaced(t *testing.T, channels int) (*Server, vodclusterv1.OriginClient) {
	t.Helper()
	return startServer(t, func(s *Server) {
		s.MaxTransfers = channels
		s.ChunkBytes = chunk
		s.TransferRateBps = chunk * 8
	})
}

// drain reads stream to its end and returns its error (nil at io.EOF).
func drain(stream vodclusterv1.Origin_FetchClient) error {
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// A fill that queues for a channel takes it from the oldest preemptible
// transfer (a node's read far ahead of a fill), which ends ABORTED; a
// transfer that is not preemptible is never ended so, and a preemptible
// one never ends another.
func TestPreemptibleTransferGivesItsChannelToAFill(t *testing.T) {
	s, c := startPaced(t, 2) // the transfers below hold their channel
	older := startSlow(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-007", NoWait: true, Preemptible: true})
	younger := startSlow(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-007", Offset: 188 * 100, NoWait: true, Preemptible: true})

	// Another preemptible transfer, queued or not, ends neither.
	_, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-001", NoWait: true, Preemptible: true}, chunk)
	wantCode(t, err, codes.ResourceExhausted, "all 2 origin transfer channels are busy")
	qctx, qcancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() {
		_, err := fetch(qctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Preemptible: true}, chunk)
		queued <- err
	}()
	waitStats(t, s, "a queued preemptible fetch", func(st Stats) bool { return st.Waiting == 1 })
	if st := s.Stats(); st.Preempted != 0 {
		t.Fatalf("a preemptible fetch ended another: %+v", st)
	}
	qcancel()
	wantCode(t, <-queued, codes.Canceled, "")
	waitStats(t, s, "the queued fetch gone", func(st Stats) bool { return st.Waiting == 0 })

	// A fill queues: the older read gives its channel up and the fill
	// gets it.
	first := make(chan error, 1)
	go func() { first <- firstChunk(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-001"}) }()
	if err := <-first; err != nil {
		t.Fatalf("fill: %v", err)
	}
	wantCode(t, drain(older), codes.Aborted, "gave this preemptible transfer's channel to a transfer that needed one")
	if st := s.Stats(); st.Preempted != 1 || st.Refused != 1 {
		t.Errorf("stats %+v: want 1 preempted, 1 refused", st)
	}

	// The younger read kept its channel; a second fill takes it.
	second := make(chan error, 1)
	go func() { second <- firstChunk(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-002"}) }()
	if err := <-second; err != nil {
		t.Fatalf("second fill: %v", err)
	}
	wantCode(t, drain(younger), codes.Aborted, "")

	if st := s.Stats(); st.Preempted != 2 {
		t.Errorf("stats %+v: want 2 preempted", st)
	}
}

// firstChunk opens a Fetch and returns once its first data chunk came
// (nil) or it failed; the transfer goes on holding its channel until the
// test ends (so that the next fill must take a preemptible one's).
func firstChunk(t *testing.T, c vodclusterv1.OriginClient, req *vodclusterv1.FetchRequest) error {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := c.Fetch(ctx, req)
	if err != nil {
		return err
	}
	for {
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		if len(m.GetData()) > 0 {
			return nil
		}
	}
}

// A prefetch (FetchRequest.prefetch, a fill no viewer waits for) gives
// its channel to a viewer's read (preemptible, no_wait) that finds every
// channel busy, and ends ABORTED; a prefetch that queues never ends a
// read; a fill ends a read; and a read that finds only fills on the
// channels is refused as before.
func TestPrefetchGivesItsChannelToARead(t *testing.T) {
	s, c := startPaced(t, 1) // the transfers below hold their channel
	prefetch := startSlow(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-007", Prefetch: true})
	read := startSlow(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Offset: 188 * 100, NoWait: true, Preemptible: true})
	wantCode(t, drain(prefetch), codes.Aborted, "prefetch's channel to a viewer's fill or read")
	if st := s.Stats(); st.Yielded != 1 || st.Preempted != 0 || st.Refused != 0 {
		t.Fatalf("stats %+v: want 1 yielded", st)
	}

	// The prefetch asks again: it queues, and the read keeps its channel.
	qctx, qcancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() {
		_, err := fetch(qctx, c, &vodclusterv1.FetchRequest{TitleId: "sample-007", Prefetch: true}, chunk)
		queued <- err
	}()
	waitStats(t, s, "the prefetch queued", func(st Stats) bool { return st.Waiting == 1 })
	if st := s.Stats(); st.Preempted != 0 || st.Active != 1 {
		t.Fatalf("a queued prefetch ended the read: %+v", st)
	}
	qcancel()
	wantCode(t, <-queued, codes.Canceled, "")
	waitStats(t, s, "the queued prefetch gone", func(st Stats) bool { return st.Waiting == 0 })

	// A fill ends the read.
	if err := firstChunk(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-002"}); err != nil {
		t.Fatalf("fill: %v", err)
	}
	wantCode(t, drain(read), codes.Aborted, "preemptible transfer's channel")

	// With only a fill on the channel, a read is refused at once.
	_, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-003", NoWait: true, Preemptible: true}, chunk)
	wantCode(t, err, codes.ResourceExhausted, "all 1 origin transfer channels are busy")
	if st := s.Stats(); st.Yielded != 1 || st.Preempted != 1 || st.Refused != 1 {
		t.Errorf("stats %+v: want 1 yielded, 1 preempted, 1 refused", st)
	}
}

// A read that finds every channel busy while a fill queues for one is
// refused at once. A fill queued comes before the prefetches queued
// before it: the channel a fill gives back goes to the fill, then to the
// prefetch (a prefetch that gave its channel away asks again and
// queues, and would otherwise take the channel back from the viewer's
// fill queued after it). A read that ends a prefetch while no fill
// queues is TestReadTakesAPrefetchsChannelBeforeQueuedPrefetches.
func TestReadAfterAQueuedFillIsRefused(t *testing.T) {
	s, _ := startServer(t, func(s *Server) { s.MaxTransfers = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	releaseA, err := s.acquire(ctx, false, classFill, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	releases := make(chan func(), 2)
	queue := func(name string, cls transferClass, preempt context.CancelCauseFunc) {
		go func() {
			if rel, err := s.acquire(ctx, false, cls, preempt); err == nil {
				got <- name
				releases <- rel
			}
		}()
	}
	queue("prefetch", classPrefetch, func(error) {})
	waitStats(t, s, "the prefetch queued", func(st Stats) bool { return st.Waiting == 1 })
	queue("fill", classFill, nil)
	waitStats(t, s, "the fill queued", func(st Stats) bool { return st.Waiting == 2 })

	_, err = s.acquire(ctx, true, classRead, func(error) {})
	wantCode(t, err, codes.ResourceExhausted, "busy")
	releaseA()
	if first := <-got; first != "fill" {
		t.Fatalf("the channel the first fill gave back went to the %s queued before the fill", first)
	}
	(<-releases)()
	if second := <-got; second != "prefetch" {
		t.Fatalf("then to the %s", second)
	}
	(<-releases)()
	if st := s.Stats(); st.Yielded != 0 || st.Refused != 1 || st.Waiting != 0 {
		t.Errorf("stats %+v: want 0 yielded, 1 refused, none waiting", st)
	}
}

// A fill that finds every channel busy ends the prefetch holding one
// (ABORTED, "to a viewer's fill or read") rather than a viewer's read far
// ahead, and takes its channel; with no prefetch left on a channel, the
// next fill ends the read, and its channel goes to that fill, past the
// prefetch asking again.
func TestFillTakesAPrefetchsChannel(t *testing.T) {
	s, c := startPaced(t, 2) // the transfers below hold their channel
	prefetch := startSlow(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-007", Prefetch: true})
	read := startSlow(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-001", Offset: 188 * 100, NoWait: true, Preemptible: true})
	if err := firstChunk(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-002"}); err != nil {
		t.Fatalf("fill: %v", err)
	}
	wantCode(t, drain(prefetch), codes.Aborted, "prefetch's channel to a viewer's fill or read")
	if st := s.Stats(); st.Yielded != 1 || st.Preempted != 0 || st.Active != 2 {
		t.Fatalf("stats %+v: want 1 yielded, the read and the fill on the channels", st)
	}

	// The prefetch asks again and queues; a second fill ends the read and
	// gets its channel before the prefetch.
	queued := make(chan error, 1)
	go func() {
		_, err := fetch(context.Background(), c, &vodclusterv1.FetchRequest{TitleId: "sample-007", Prefetch: true}, chunk)
		queued <- err
	}()
	waitStats(t, s, "the prefetch queued", func(st Stats) bool { return st.Waiting == 1 })
	if err := firstChunk(t, c, &vodclusterv1.FetchRequest{TitleId: "sample-003"}); err != nil {
		t.Fatalf("second fill: %v", err)
	}
	wantCode(t, drain(read), codes.Aborted, "preemptible transfer's channel")
	if st := s.Stats(); st.Yielded != 1 || st.Preempted != 1 || st.Waiting != 1 {
		t.Errorf("stats %+v: want 1 yielded, 1 preempted, the prefetch still queued", st)
	}
	select {
	case err := <-queued:
		t.Fatalf("the prefetch ended (%v) with both fills on the channels", err)
	default:
	}
}

// A read waiting for the channel of the prefetch it ended (its channel
// comes back on the transfer's own goroutine) does not keep a second read
// from ending another prefetch: reads that find every channel busy are
// not a queue that reads give way to (the second was refused at once).
func TestReadsEachTakeAPrefetchsChannel(t *testing.T) {
	s, _ := startServer(t, func(s *Server) { s.MaxTransfers = 2 })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // a read still waiting when the test fails
	type held struct {
		release func()
		ended   chan error
	}
	prefetch := func() held {
		ended := make(chan error, 1)
		rel, err := s.acquire(ctx, false, classPrefetch, func(cause error) { ended <- cause })
		if err != nil {
			t.Fatal(err)
		}
		return held{rel, ended}
	}
	a, b := prefetch(), prefetch()
	first := make(chan error, 1)
	go func() {
		rel, err := s.acquire(ctx, true, classRead, func(error) {})
		if err == nil {
			defer rel()
		}
		first <- err
	}()
	if cause := <-a.ended; cause != errYielded {
		t.Fatalf("prefetch A ended with %v, want errYielded", cause)
	}
	waitStats(t, s, "the first read waiting for A's channel", func(st Stats) bool { return st.Waiting == 1 })
	second := make(chan error, 1)
	go func() {
		rel, err := s.acquire(ctx, true, classRead, func(error) {})
		if err == nil {
			defer rel()
		}
		second <- err
	}()
	select {
	case cause := <-b.ended:
		if cause != errYielded {
			t.Fatalf("prefetch B ended with %v, want errYielded", cause)
		}
	case err := <-second:
		t.Fatalf("the second read was answered (%v) before it ended prefetch B", err)
	}
	a.release()
	b.release()
	if err := <-first; err != nil {
		t.Errorf("first read: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("second read: %v", err)
	}
	if st := s.Stats(); st.Yielded != 2 || st.Refused != 0 {
		t.Errorf("stats %+v: want 2 yielded, none refused", st)
	}
}

// A read that ends a prefetch takes its channel past the prefetches
// queued for one (a prefetch asking again after it gave its channel
// away): the channel is handed over, not given back to the queue, and
// goes to the queue when the read gives it back. Before, a prefetch
// queued made every read be refused at once.
func TestReadTakesAPrefetchsChannelBeforeQueuedPrefetches(t *testing.T) {
	s, _ := startServer(t, func(s *Server) { s.MaxTransfers = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ended := make(chan error, 1)
	releaseA, err := s.acquire(ctx, false, classPrefetch, func(cause error) { ended <- cause })
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan func(), 1)
	go func() {
		if rel, err := s.acquire(ctx, false, classPrefetch, func(error) {}); err == nil {
			queued <- rel
		}
	}()
	waitStats(t, s, "a prefetch queued", func(st Stats) bool { return st.Waiting == 1 })
	type got struct {
		release func()
		err     error
	}
	read := make(chan got, 1)
	go func() {
		rel, err := s.acquire(ctx, true, classRead, func(error) {})
		read <- got{rel, err}
	}()
	select {
	case cause := <-ended:
		if cause != errYielded {
			t.Fatalf("the prefetch on the channel ended with %v, want errYielded", cause)
		}
	case r := <-read:
		t.Fatalf("the read was answered (%v) before it ended the prefetch on the channel", r.err)
	}
	releaseA() // the prefetch's transfer returns: its channel goes to the read
	r := <-read
	if r.err != nil {
		t.Fatalf("read: %v", r.err)
	}
	select {
	case <-queued:
		t.Fatal("the queued prefetch got the channel the read was handed")
	default:
	}
	r.release()
	select {
	case rel := <-queued:
		rel()
	case <-time.After(10 * time.Second):
		t.Fatal("the queued prefetch did not get the channel the read gave back")
	}
	if st := s.Stats(); st.Yielded != 1 || st.Refused != 0 {
		t.Errorf("stats %+v: want 1 yielded, none refused", st)
	}
}

// A read that stops waiting for the channel of the prefetch it ended (its
// transfer has not returned within readYieldWait) is refused, and the
// channel, once the prefetch gives it back, goes to the queue: it is not
// lost.
func TestReadGivingUpOnAHandoffLosesNoChannel(t *testing.T) {
	was := readYieldWait
	readYieldWait = 50 * time.Millisecond
	t.Cleanup(func() { readYieldWait = was })
	s, _ := startServer(t, func(s *Server) { s.MaxTransfers = 1 })
	ctx := context.Background()
	releaseA, err := s.acquire(ctx, false, classPrefetch, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.acquire(ctx, true, classRead, func(error) {}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("read whose handoff did not come: %v, want RESOURCE_EXHAUSTED", err)
	}
	releaseA() // the prefetch's transfer returns late
	rel, err := s.acquire(ctx, true, classFill, nil)
	if err != nil {
		t.Fatalf("the channel was lost: %v", err)
	}
	rel()
	if st := s.Stats(); st.Yielded != 1 || st.Refused != 1 || st.Waiting != 0 {
		t.Errorf("stats %+v: want 1 yielded, 1 refused, none waiting", st)
	}
}

// A fill that queues while a read waits for the channel of the prefetch
// it ended (a fill ends only the reads on a channel, and that read had
// none yet) gets the channel: the read is refused, not handed it. Before,
// the read took it and the fill waited for the whole read.
func TestFillQueuedDuringAHandoffGetsTheChannel(t *testing.T) {
	s, _ := startServer(t, func(s *Server) { s.MaxTransfers = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	releaseA, err := s.acquire(ctx, false, classPrefetch, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		rel, err := s.acquire(ctx, true, classRead, func(error) {})
		if err == nil {
			rel()
		}
		read <- err
	}()
	waitStats(t, s, "the read waiting for the prefetch's channel", func(st Stats) bool { return st.Waiting == 1 })
	fill := make(chan func(), 1)
	go func() {
		if rel, err := s.acquire(ctx, false, classFill, nil); err == nil {
			fill <- rel
		}
	}()
	waitStats(t, s, "the fill queued", func(st Stats) bool { return st.Waiting == 2 })
	releaseA()
	if err := <-read; status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("read: %v, want RESOURCE_EXHAUSTED (the queued fill comes first)", err)
	}
	select {
	case rel := <-fill:
		rel()
	case <-time.After(10 * time.Second):
		t.Fatalf("the queued fill did not get the channel: %+v", s.Stats())
	}
}

// Under load, fills, reads and prefetches whose callers leave at random
// (some transfers returning after their caller left, as a transfer stuck
// in a read of its file does) lose no channel and give none back twice:
// afterwards exactly MaxTransfers fills get one at once. Bounded: 12
// goroutines of 300 transfers of a few milliseconds.
func TestHandoffsUnderLoadLoseNoChannel(t *testing.T) {
	was := readYieldWait
	readYieldWait = 3 * time.Millisecond
	t.Cleanup(func() { readYieldWait = was })
	const n = 3
	s, _ := startServer(t, func(s *Server) { s.MaxTransfers = n })
	transfer := func(r *rand.Rand, noWait bool, cls transferClass) {
		base, leaveCaller := context.WithTimeout(context.Background(), time.Duration(r.IntN(6000))*time.Microsecond)
		defer leaveCaller()
		ctx := base
		var preempt context.CancelCauseFunc
		if cls != classFill {
			ctx, preempt = context.WithCancelCause(base)
			defer preempt(nil)
		}
		release, err := s.acquire(ctx, noWait, cls, preempt)
		if err != nil {
			return
		}
		var once sync.Once
		leave := func() { once.Do(release) } // as Fetch's: at the caller's leaving or the transfer's end
		defer leave()
		stop := context.AfterFunc(ctx, leave)
		defer stop()
		select {
		case <-time.After(time.Duration(r.IntN(4000)) * time.Microsecond):
		case <-ctx.Done():
			if r.IntN(2) == 0 { // a transfer that returns after its caller left
				<-time.After(time.Duration(r.IntN(4000)) * time.Microsecond)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				switch r.IntN(4) {
				case 0:
					transfer(r, false, classFill)
				case 1:
					transfer(r, true, classRead)
				default:
					transfer(r, false, classPrefetch)
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if _, err := s.acquire(context.Background(), true, classFill, nil); err != nil {
			t.Fatalf("channel %d lost: %v; stats %+v", i, err, s.Stats())
		}
	}
	if _, err := s.acquire(context.Background(), true, classFill, nil); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a channel given back twice: one more fill got %v", err)
	}
	st := s.Stats()
	if st.Waiting != 0 {
		t.Errorf("stats %+v: want none waiting", st)
	}
	t.Logf("%d prefetches yielded, %d reads preempted, %d refused", st.Yielded, st.Preempted, st.Refused)
}

// A channel freed while a fill is on its way into the queue (the fill
// ended a read, whose channel came back before the fill reached the
// semaphore's queue) goes to the fill, not to a prefetch or a read that
// comes meanwhile. Before, the prefetch took it at once and the fill
// waited for its whole transfer.
func TestChannelFreedForAQueuingFillGoesToIt(t *testing.T) {
	s, _ := startServer(t, func(s *Server) { s.MaxTransfers = 1 })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.preemptMu.Lock()
	s.queued++ // a fill past its decision to queue, not yet in the semaphore's queue
	s.preemptMu.Unlock()
	prefetch := make(chan error, 1)
	go func() {
		rel, err := s.acquire(ctx, false, classPrefetch, func(error) {})
		if err == nil {
			rel()
		}
		prefetch <- err
	}()
	waitStats(t, s, "the prefetch waiting", func(st Stats) bool { return st.Waiting == 1 })
	_, err := s.acquire(ctx, true, classRead, func(error) {})
	wantCode(t, err, codes.ResourceExhausted, "busy")
	rel, err := s.acquire(ctx, true, classFill, nil) // the fill reaches the channel
	if err != nil {
		t.Fatalf("the fill: %v", err)
	}
	s.preemptMu.Lock()
	s.leftQueueLocked()
	s.preemptMu.Unlock()
	select {
	case err := <-prefetch:
		t.Fatalf("the prefetch was answered (%v) with the fill on the only channel", err)
	default:
	}
	rel()
	if err := <-prefetch; err != nil {
		t.Fatalf("the prefetch once the fill gave the channel back: %v", err)
	}
}
