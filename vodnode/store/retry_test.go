package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "vodcluster/proto/vodcluster/v1"
)

// flakyOrigin is an origin that can be down: while down, every transfer
// sends the bytes before cut (none from cut on) and then fails with
// Unavailable, as a transfer cut by an origin restart does.
type flakyOrigin struct {
	*origin
	cut     int64
	down    atomic.Bool
	refused chan struct{} // one value per transfer failed while down (never blocks)

	omu     sync.Mutex
	offsets []int64 // the offset of every Fetch, in order
}

func newFlakyOrigin(titles map[string][]byte, cut int64) *flakyOrigin {
	return &flakyOrigin{origin: &origin{titles: titles}, cut: cut, refused: make(chan struct{}, 1024)}
}

func (o *flakyOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	o.omu.Lock()
	o.offsets = append(o.offsets, req.GetOffset())
	o.omu.Unlock()
	if !o.down.Load() {
		return o.origin.Fetch(req, s)
	}
	o.origin.mu.Lock()
	d := o.titles[req.GetTitleId()]
	o.fetches++
	o.origin.mu.Unlock()
	if err := checkVersion(req, d); err != nil {
		return err
	}
	for off := req.GetOffset(); off < min(o.cut, int64(len(d))); off += 64 << 10 {
		if err := s.Send(&pb.FetchChunk{Offset: off, Data: d[off:min(off+64<<10, o.cut)]}); err != nil {
			return err
		}
	}
	select {
	case o.refused <- struct{}{}:
	default:
	}
	return status.Error(codes.Unavailable, "origin restarting (test)")
}

func (o *flakyOrigin) fetchOffsets() []int64 {
	o.omu.Lock()
	defer o.omu.Unlock()
	return append([]int64(nil), o.offsets...)
}

// waitView waits (on the title's notifications, at most d) until cond holds
// for its view, and returns that view.
func waitView(t *testing.T, tt *Title, d time.Duration, what string, cond func(*View) bool) *View {
	t.Helper()
	deadline := time.After(d)
	for {
		v := tt.View()
		if cond(v) {
			return v
		}
		if v.Complete || v.Err != nil {
			t.Fatalf("waiting for %s: fill ended (complete %v, err %v)", what, v.Complete, v.Err)
		}
		ch := make(chan struct{})
		if !tt.Notify(v.Index.Size, func() { close(ch) }) {
			continue
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s (%d bytes readable)", what, tt.View().Index.Size)
		}
	}
}

// A fill the origin cuts off is retried through the origin's outage, from
// the offset reached: readers keep the bytes on disk meanwhile, the title
// ends up byte for byte the origin's, and no byte is fetched twice.
func TestFillRidesOutOriginOutage(t *testing.T) {
	data := sample(t)
	const cut = 188 * 1000
	o := newFlakyOrigin(map[string][]byte{"t1": data}, cut)
	o.down.Store(true)
	dir := t.TempDir()
	s, tt := openAcquire(t, Config{Dir: dir, Origin: startOrigin(t, o),
		Retry: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, RetryFor: 20 * time.Second}, "t1")

	// the bytes before the cut are readable while the origin is down
	waitView(t, tt, 10*time.Second, "the bytes before the cut", func(v *View) bool { return v.Index.Size >= cut })
	got := make([]byte, cut)
	if _, err := tt.ReadAt(got, 0); err != nil || !bytes.Equal(got, data[:cut]) {
		t.Fatalf("reading the filled part during the outage: %v", err)
	}
	// the outage lasts at least 1.5 s and three refused transfers
	outage := time.Now()
	for i := range 3 {
		select {
		case <-o.refused:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d refused transfers", i)
		}
	}
	if v := tt.View(); v.Err != nil || v.Complete {
		t.Fatalf("during the outage: complete %v, err %v", v.Complete, v.Err)
	}
	time.Sleep(time.Until(outage.Add(1500 * time.Millisecond))) // the outage's length, not a synchronisation
	o.down.Store(false)

	waitComplete(t, tt)
	offs := o.fetchOffsets()
	if len(offs) < 4 {
		t.Errorf("%d origin transfers, want more than the 3 refused", len(offs))
	}
	for i, off := range offs[1:] {
		if off != cut {
			t.Errorf("transfer %d from offset %d, want a resume at %d", i+2, off, cut)
		}
	}
	if got := s.OriginBytes(); got != int64(len(data)) {
		t.Errorf("%d bytes from the origin for a title of %d", got, len(data))
	}
	stored, err := os.ReadFile(filepath.Join(dir, "t1.ts"))
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("stored title differs from the origin's (%d of %d bytes, %v)", len(stored), len(data), err)
	}
}

// A fill whose origin stays down fails once it received nothing for
// RetryFor, after more than one attempt, as before: the partial file is
// removed, readers get the error and the failure is reported. A stored
// title it would need the room of is not evicted, since the origin never
// sent a byte.
func TestFillFailsAfterRetryFor(t *testing.T) {
	data := sample(t)
	o := newFlakyOrigin(map[string][]byte{"keep": data, "gone": data}, 0)
	dir := t.TempDir()
	const retryFor = 300 * time.Millisecond
	s, err := Open(Config{Dir: dir, Origin: startOrigin(t, o),
		DiskBytes: int64(len(data)) * 3 / 2, Retry: 20 * time.Millisecond, RetryFor: retryFor})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	keep, err := s.Acquire(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	waitComplete(t, keep)
	s.Release(keep)

	o.down.Store(true)
	start := time.Now()
	tt, err := s.Acquire(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(tt)
	done := make(chan struct{})
	if tt.Notify(1<<40, func() { close(done) }) {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the fill neither failed nor completed")
		}
	}
	elapsed := time.Since(start)
	if tt.View().Err == nil {
		t.Fatal("a fill from an origin that is down succeeded")
	}
	if elapsed < retryFor || elapsed > retryFor+3*time.Second {
		t.Errorf("the fill failed after %v, want about %v", elapsed, retryFor)
	}
	if n := len(o.fetchOffsets()); n < 3 {
		t.Errorf("%d transfers of the failed fill and the first, want more than one retry", n)
	}
	s.fills.Wait()
	if _, err := os.Stat(filepath.Join(dir, "gone.ts.part")); !os.IsNotExist(err) {
		t.Errorf(".part of the failed fill: %v", err)
	}
	if f := s.TakeFailures(); len(f) != 1 || f[0].Title != "gone" {
		t.Errorf("failures %+v, want the fill of gone", f)
	}
	if st := s.Titles(); len(st) != 1 || st[0].ID != "keep" {
		t.Errorf("titles %+v, want keep still stored", st)
	}
	if used, _, _ := s.Usage(); used != int64(len(data)) {
		t.Errorf("used %d bytes, want %d", used, len(data))
	}
}

// The pauses between attempts double up to the maximum, jittered into
// [1/2, 1] of their step, and stop at the end of the window; progress
// starts a new window.
func TestRetrierBackoff(t *testing.T) {
	r := retrier{base: 100 * time.Millisecond, max: time.Second, window: 5 * time.Second}
	now := time.Unix(1000, 0)
	step := 100 * time.Millisecond
	var total time.Duration
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("no end to the retries")
		}
		d, ok := r.next(now.Add(total))
		if !ok {
			break
		}
		if left := 5*time.Second - total; d > step || (d < step/2 && d != left) {
			t.Fatalf("pause %d: %v, want within [%v, %v]", i, d, step/2, step)
		}
		total += d
		step = min(2*step, time.Second)
	}
	if total != 5*time.Second {
		t.Errorf("retries over %v, want the 5 s window", total)
	}
	r.progress()
	if d, ok := r.next(now.Add(time.Hour)); !ok || d > 100*time.Millisecond {
		t.Errorf("after progress: %v %v, want a new window from the first pause", d, ok)
	}
}

// Time an attempt spent queued at the origin does not count against the
// window; before the window's first failure it changes nothing.
func TestRetrierWindowLeavesOutQueuedTime(t *testing.T) {
	r := retrier{base: 100 * time.Millisecond, max: time.Second, window: 5 * time.Second}
	now := time.Unix(1000, 0)
	r.queued(time.Hour) // no failure yet: no window to move
	if _, ok := r.next(now); !ok {
		t.Fatal("no retry after the first failure")
	}
	r.queued(20 * time.Second)
	if d, ok := r.next(now.Add(24 * time.Second)); !ok || d > time.Second {
		t.Fatalf("24 s after the first failure, 20 of them queued: %v %v, want a retry within the window's last second", d, ok)
	}
	if _, ok := r.next(now.Add(25 * time.Second)); ok {
		t.Fatal("a retry with 5 s of the window spent outside the queue")
	}
}
