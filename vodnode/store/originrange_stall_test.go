package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"

	pb "vodcluster/proto/vodcluster/v1"
)

// rangeStallOrigin holds every fill's transfer queued (no message) and
// answers a preemptible transfer (an OriginRange) with its started
// message and the bytes before cut, then nothing, keeping the stream open
// until the client gives it up (abandoned is closed then).
type rangeStallOrigin struct {
	*origin
	cut       int64
	abandoned chan struct{}
}

func (o *rangeStallOrigin) Fetch(req *pb.FetchRequest, s grpc.ServerStreamingServer[pb.FetchChunk]) error {
	if !req.GetPreemptible() {
		<-s.Context().Done()
		return s.Context().Err()
	}
	o.origin.mu.Lock()
	d := o.titles[req.GetTitleId()]
	o.origin.mu.Unlock()
	if err := s.Send(&pb.FetchChunk{Offset: req.GetOffset(), Started: true}); err != nil {
		return err
	}
	for off := req.GetOffset(); off < o.cut; off += 64 << 10 {
		if err := s.Send(&pb.FetchChunk{Offset: off, Data: d[off:min(off+64<<10, o.cut)]}); err != nil {
			return err
		}
	}
	<-s.Context().Done()
	close(o.abandoned)
	return s.Context().Err()
}

// An origin read of a range that the origin starts and then stops
// sending on, without closing it, fails after StallAfter with errStalled
// (before, Read waited until the viewer left, holding the node's read),
// and the transfer is given up at the origin. The bytes before the stall
// are the title's.
func TestOriginRangeStalled(t *testing.T) {
	t.Parallel() // StallAfter of real time
	data := sample(t)
	const from, cut = 188 * 100, 188 * 1000
	o := &rangeStallOrigin{origin: &origin{titles: map[string][]byte{"t1": data}}, cut: cut, abandoned: make(chan struct{})}
	s, tt := openAcquire(t, Config{Dir: t.TempDir(), Origin: startOrigin(t, o), StallAfter: stallAfterTest}, "t1")

	rng, err := s.OriginRange(context.Background(), tt, from, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rng.Close()
	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := io.ReadAll(rng)
		done <- result{got, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * stallAfterTest):
		t.Fatal("the read of a stalled transfer did not end")
	}
	if !errors.Is(res.err, errStalled) {
		t.Errorf("read ended with %v, want errStalled", res.err)
	}
	if !bytes.Equal(res.got, data[from:cut]) {
		t.Errorf("read %d bytes before the stall, want the title's %d from %d", len(res.got), cut-from, from)
	}
	select {
	case <-o.abandoned:
	case <-time.After(10 * stallAfterTest):
		t.Fatal("the stalled transfer was not given up at the origin")
	}
}
