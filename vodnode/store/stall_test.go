package store

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// stallingOrigin, an origin that predates the started message (it sends
// none), answers its first transfer with the bytes before cut and then
// nothing, keeping the stream open (a process stuck in a read while
// its gRPC transport still answers pings), until the client gives the
// transfer up; the transfers after it are served whole. held, when set,
// delays the first chunk of the first transfer until it is closed (a
// transfer queued for a channel).
type stallingOrigin struct {
	*origin
	cut  int64
	held chan struct{}

	mu        sync.Mutex
	offsets   []int64       // the offset of every Fetch, in order
	abandoned chan struct{} // closed when the client gave up the stalled transfer
}

func (o *stallingOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	o.mu.Lock()
	o.offsets = append(o.offsets, req.GetOffset())
	first := len(o.offsets) == 1
	o.mu.Unlock()
	if !first {
		return o.origin.Fetch(req, s)
	}
	if o.held != nil {
		select {
		case <-o.held:
		case <-s.Context().Done():
			return s.Context().Err()
		}
	}
	o.origin.mu.Lock()
	d := o.titles[req.GetTitleId()]
	o.origin.mu.Unlock()
	for off := req.GetOffset(); off < o.cut; off += 64 << 10 {
		if err := s.Send(&pb.FetchChunk{Offset: off, Data: d[off:min(off+64<<10, o.cut)]}); err != nil {
			return err
		}
	}
	<-s.Context().Done()
	close(o.abandoned)
	return s.Context().Err()
}

func (o *stallingOrigin) fetchOffsets() []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]int64(nil), o.offsets...)
}

// stallAfterTest is the StallAfter of the tests: far above the gaps
// between two chunks of a transfer that goes on (a loaded CI machine under
// the race detector, origin and store in one process, delayed some by
// 100 to 200 ms, and then gave up a transfer that was not stalled), far
// below the tests' waits.
const stallAfterTest = 2 * time.Second

// A transfer the origin starts and then stops sending on, without closing
// it, is given up after StallAfter and resumed from the offset reached:
// the title completes byte for byte, and no byte is fetched twice.
func TestFillResumesStalledTransfer(t *testing.T) {
	t.Parallel() // StallAfter of real time
	data := sample(t)
	const cut = 188 * 1000
	o := &stallingOrigin{origin: &origin{titles: map[string][]byte{"t1": data}}, cut: cut, abandoned: make(chan struct{})}
	dir := t.TempDir()
	s, tt := openAcquire(t, Config{Dir: dir, Origin: startOrigin(t, o), StallAfter: stallAfterTest,
		Retry: 20 * time.Millisecond, RetryFor: 20 * time.Second}, "t1")

	waitComplete(t, tt)
	select {
	case <-o.abandoned:
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled transfer was not given up at the origin")
	}
	if offs := o.fetchOffsets(); len(offs) != 2 || offs[1] != cut {
		t.Errorf("transfers from offsets %v, want [0 %d]", offs, cut)
	}
	if got := s.OriginBytes(); got != int64(len(data)) {
		t.Errorf("%d bytes from the origin for a title of %d", got, len(data))
	}
	stored, err := os.ReadFile(filepath.Join(dir, "t1.ts"))
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("stored title differs from the origin's (%d of %d bytes, %v)", len(stored), len(data), err)
	}
}

// From an origin that predates the started message (pb.FetchChunk.started;
// stallingOrigin sends none), the wait for a transfer's first chunk is not
// a stall: such an origin may be queueing the transfer until one of its
// channels is free, however long that is, and says nothing when it starts.
// A transfer held for twice StallAfter before its first chunk is not given
// up (one transfer only), and the stall after it still is. (From a cdp
// origin, which says when the transfer starts: stall_start_test.go.)
func TestFillWaitsForFirstChunkBeyondStallAfter(t *testing.T) {
	t.Parallel() // several times StallAfter of real time
	data := sample(t)
	const cut = 188 * 1000
	const stallAfter = stallAfterTest
	o := &stallingOrigin{origin: &origin{titles: map[string][]byte{"t1": data}}, cut: cut,
		held: make(chan struct{}), abandoned: make(chan struct{})}
	_, tt := openAcquire(t, Config{Dir: t.TempDir(), Origin: startOrigin(t, o), StallAfter: stallAfter,
		Retry: 20 * time.Millisecond, RetryFor: 20 * time.Second}, "t1")

	time.Sleep(2 * stallAfter) // how long the origin queues the transfer, not a synchronisation
	if offs := o.fetchOffsets(); len(offs) != 1 {
		t.Fatalf("transfers from offsets %v while the first was queued, want one", offs)
	}
	close(o.held)
	waitComplete(t, tt)
	if offs := o.fetchOffsets(); len(offs) != 2 || offs[1] != cut {
		t.Errorf("transfers from offsets %v, want [0 %d]", offs, cut)
	}
}
